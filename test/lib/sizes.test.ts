import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {formatSize, formatSizeExact} from '../../src/lib/sizes.js'

test('formatSize writes binary units with at most two decimals', () => {
  assert.is(formatSize(26_214_400), '25 MiB')
  assert.is(formatSize(26_345_472), '25.13 MiB')
  assert.is(formatSize(1_572_864), '1.5 MiB')
  assert.is(formatSize(65_536), '64 KiB')
  assert.is(formatSize(1_000_000), '976.56 KiB')
  assert.is(formatSize(512), '512 bytes')
  assert.is(formatSize(1), '1 byte')
  assert.is(formatSize(0), '0 bytes')
})

test('formatSizeExact adds the exact count, grouped, from 1 KiB on', () => {
  assert.is(formatSizeExact(26_214_400), '25 MiB (26 214 400 bytes)')
  assert.is(formatSizeExact(209_715_200), '200 MiB (209 715 200 bytes)')
  assert.is(formatSizeExact(1_000_000), '976.56 KiB (1 000 000 bytes)')
  assert.is(formatSizeExact(2048), '2 KiB (2 048 bytes)')
  assert.is(formatSizeExact(512), '512 bytes')
})

test.run()

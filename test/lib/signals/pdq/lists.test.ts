import {execFileSync} from 'node:child_process'
import {mkdtemp, readdir, rm, truncate, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {hammingDistance, hashToHex} from '../../../../src/lib/signals/pdq/hash256.js'
import {entryOf, listErrors, parseHashList} from '../../../../src/lib/signals/pdq/list-file.js'
import {checkHashListFile, loadHashList, MAX_LIST_BYTES} from '../../../../src/lib/signals/pdq/list-load.js'
import {confidenceOf, matchHash} from '../../../../src/lib/signals/pdq/match.js'
import {buildMultiIndex, searchMultiIndex} from '../../../../src/lib/signals/pdq/multi-index.js'
import {rejection} from '../../../helpers/errors.js'
import {random} from '../../../helpers/nsfw-images.js'
import {flip, randomHash} from '../../../helpers/pdq-hashes.js'

const A = 'ab'.repeat(32)
const B = '0f'.repeat(32)

test('parses hash, label and note; skips comments and blank lines; the note keeps its commas', () => {
  const text = `# known bad\n\n${A}\n  ${B.toUpperCase()} , case-7 , seen twice, then removed \r\n${A},case-8\n`
  const {list, errors} = parseHashList(Buffer.from(text))
  assert.equal(errors, [])
  assert.is(list.count, 3)
  assert.is(hashToHex(list.hashes.subarray(32, 64)), B)
  assert.equal([0, 1, 2].map((i) => entryOf(list, i)), [
    {label: '', note: ''},
    {label: 'case-7', note: 'seen twice, then removed'},
    {label: 'case-8', note: ''},
  ])
})

test('bad lines are reported with their numbers', () => {
  const text = `${A}\nnot-a-hash,x\n${A.slice(2)}zz\n${A} trailing\n${A}`
  const {list, errors} = parseHashList(Buffer.from(text))
  assert.equal(errors.map((e) => e.line), [2, 3, 4])
  assert.is(list.count, 2)
  const error = listErrors('bad.txt', errors)
  assert.is(error?.code, 'invalid_config')
  assert.is(
    error?.message,
    'hash list bad.txt: line 2: not a PDQ hash: 10 characters where 64 hexadecimal digits are expected; line 3: not a PDQ hash: character 63 is not a hexadecimal digit; line 4: expected a comma after the hash',
  )
})

test('a hash of 65 digits or one followed by other text is a bad line; a line of only a hash needs no comma', () => {
  const text = `${A}a,x\n${A}\n${A}#x\n${A.slice(4)},x`
  const {list, errors} = parseHashList(Buffer.from(text))
  assert.equal(errors, [
    {line: 1, message: 'not a PDQ hash: 65 characters where 64 hexadecimal digits are expected'},
    {line: 3, message: 'not a PDQ hash: 66 characters where 64 hexadecimal digits are expected'},
    {line: 4, message: 'not a PDQ hash: 60 characters where 64 hexadecimal digits are expected'},
  ])
  assert.is(list.count, 1)
})

test('lines with the same fields share one record, however they are spaced', () => {
  const {list} = parseHashList(Buffer.from(`${A},case-7\n${B}, case-7 \n${A},case-8,a note\n${B},case-7\n${A}\n${B},\n`))
  assert.equal([...list.records], [1, 1, 2, 1, 0, 0])
  assert.equal(list.recordTexts, ['', 'case-7', 'case-8\0a note'])
})

test('the multi-index finds exactly what a full scan finds within the threshold (planted distances 0-40, thresholds up to 43)', () => {
  const next = random(7)
  const base = Array.from({length: 3000}, () => randomHash(next))
  const queries = base.slice(0, 200).map((h, i) => flip(h, i % 41, next))
  const text = base.map((h, i) => `${hashToHex(h)},n${i}`).join('\n')
  const {list} = parseHashList(Buffer.from(text))
  const index = buildMultiIndex(list)
  for (const threshold of [0, 9, 10, 15, 21, 31, 43]) {
    for (const q of queries) {
      const scan = base.map((h, id) => ({id, distance: hammingDistance(h, q)})).filter((h) => h.distance <= threshold)
      scan.sort((a, b) => a.distance - b.distance || a.id - b.id)
      assert.equal(searchMultiIndex(index, q, threshold), scan)
    }
  }
})

test('matches name the list, label and note, with confidence 1 - distance / 64; low-quality images match nothing', async () => {
  const next = random(3)
  const listed = randomHash(next)
  const dir = await mkdtemp(join(tmpdir(), 'mod-pdq-'))
  try {
    const file = join(dir, 'bad.txt')
    await writeFile(file, `${hashToHex(listed)},case-1,reported 2026-11-01\n${hashToHex(randomHash(next))},case-2\n`)
    const loaded = await loadHashList(file, 'removals')
    const near = flip(listed, 12, next)
    assert.equal(await matchHash([loaded], {hash: near, quality: 80}), [
      {list: 'removals', label: 'case-1', note: 'reported 2026-11-01', distance: 12, confidence: 1 - 12 / 64, hash: hashToHex(listed), variant: 'original'},
    ])
    assert.equal(await matchHash([loaded], {hash: near, quality: 49}), [])
    assert.equal((await matchHash([loaded], {hash: near, quality: 49}, {qualityFloor: 40})).length, 1)
    assert.equal(await matchHash([loaded], {hash: near, quality: 80}, {thresholds: {removals: 11}}), [])
    assert.is(confidenceOf(0), 1)
    assert.is(confidenceOf(31), 1 - 31 / 64)
  } finally {
    await rm(dir, {recursive: true, force: true})
  }
})

test('a mirrored copy matches through its dihedral variants', async () => {
  const next = random(4)
  const listed = randomHash(next)
  const dir = await mkdtemp(join(tmpdir(), 'mod-pdq-'))
  try {
    const file = join(dir, 'l.txt')
    await writeFile(file, `${hashToHex(listed)},x\n`)
    const loaded = await loadHashList(file, 'l')
    const other = randomHash(next)
    const dihedral = {original: other, rotate90: other, rotate180: other, rotate270: other, flipX: other, flipY: flip(listed, 3, next), flipPlus1: other, flipMinus1: other}
    const [m] = await matchHash([loaded], {hash: other, quality: 100, dihedral})
    assert.equal([m.variant, m.distance], ['flipY', 3])
  } finally {
    await rm(dir, {recursive: true, force: true})
  }
})

test('a list with bad lines is refused with their line numbers, and no cache is written', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'mod-pdq-'))
  try {
    const file = join(dir, 'list.txt')
    await writeFile(file, `${A}\n\nxyz\n`)
    const cacheDir = join(dir, 'cache')
    const e = await rejection(loadHashList(file, 'l', {cacheDir, shared: true}))
    assert.is(e.code, 'invalid_config')
    assert.is(e.message, `hash list ${file}: line 3: not a PDQ hash: 3 characters where 64 hexadecimal digits are expected`)
    assert.equal(await readdir(join(cacheDir, 'hash-lists')), [])
    assert.is((await rejection(loadHashList(join(dir, 'none.txt'), 'l'))).message, `hash list ${join(dir, 'none.txt')} does not exist`)
  } finally {
    await rm(dir, {recursive: true, force: true})
  }
})

test('a list names no content of the file in its errors: a file of secrets is reported by line numbers and reasons only', async () => {
  const text = 'password=hunter2\napi_key: sk-live-51HzQ\n' + `${'9'.repeat(63)}é,x\n`
  const {errors} = parseHashList(Buffer.from(text))
  assert.equal(errors, [
    {line: 1, message: 'not a PDQ hash: 16 characters where 64 hexadecimal digits are expected'},
    {line: 2, message: 'not a PDQ hash: 8 characters where 64 hexadecimal digits are expected'},
    {line: 3, message: 'not a PDQ hash: character 64 is not a hexadecimal digit'},
  ])
  const message = listErrors('secrets.txt', errors)?.message ?? ''
  for (const secret of ['hunter2', 'password', 'sk-live', 'api_key']) assert.not.ok(message.includes(secret), message)
})

test('only a regular file of at most 1 GiB is a list: devices, FIFOs and folders are refused at once, without reading them', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'mod-pdq-'))
  try {
    const fifo = join(dir, 'fifo')
    execFileSync('mkfifo', [fifo])
    for (const file of ['/dev/zero', '/dev/urandom', fifo, dir]) {
      for (const attempt of [() => loadHashList(file, 'l'), () => checkHashListFile(file)]) {
        const e = await rejection(attempt())
        assert.is(e.code, 'invalid_config')
        assert.is(e.message, `hash list ${file} is not a regular file`)
      }
    }
    // A sparse file: its size is over the limit without a gigabyte written.
    const big = join(dir, 'big.txt')
    await writeFile(big, `${A}\n`)
    await truncate(big, MAX_LIST_BYTES + 1)
    assert.is((await rejection(checkHashListFile(big))).message, `hash list ${big} is 1025 MiB, over the 1024 MiB a list may have`)
    assert.is((await rejection(loadHashList(big, 'l'))).code, 'invalid_config')
  } finally {
    await rm(dir, {recursive: true, force: true})
  }
})

test.run()

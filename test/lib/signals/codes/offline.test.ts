import {spawnSync} from 'node:child_process'
import {createHash} from 'node:crypto'
import {readFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import {fileURLToPath} from 'node:url'

import {test} from 'uvu'
import * as assert from 'uvu/assert'
import {ZXING_WASM_SHA256} from 'zxing-wasm/reader'

import {nodeArgs} from '../../../helpers/ts-script.js'

const sha256 = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex')
const resolve = createRequire(import.meta.url).resolve

test('the reader needs no network: its WebAssembly comes from the installed package', () => {
  const child = spawnSync(process.execPath, nodeArgs(fileURLToPath(new URL('./offline.ts', import.meta.url))), {encoding: 'utf8'})
  assert.is(child.status, 0, child.stderr)
  const out = JSON.parse(child.stdout) as {codes: {payload: string}[]; attempts: string[]; compiled: string[]}
  assert.equal(out.codes.map((c) => c.payload), ['offline'])
  assert.equal(out.attempts, [])
  const reader = sha256(resolve('zxing-wasm/reader/zxing_reader.wasm'))
  // The file on disk is the one this version of zxing-wasm was built with.
  assert.is(reader, ZXING_WASM_SHA256)
  // The writer's module (which drew the code) and the reader's, both from their files.
  assert.equal(out.compiled.sort(), [reader, sha256(resolve('zxing-wasm/writer/zxing_writer.wasm'))].sort())
})

test.run()

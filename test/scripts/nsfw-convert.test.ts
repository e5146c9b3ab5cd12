import {mkdtemp, readFile, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {NSFW_MODEL_DIR, NSFW_ONNX, sha256, writeNsfwModel} from '../../scripts/nsfw/convert.js'
import {permute} from '../../scripts/onnx/keras.js'

const dir = await mkdtemp(join(tmpdir(), 'mod-nsfw-convert-'))

test.after(async () => {
  await rm(dir, {recursive: true, force: true})
})

test('permute reorders axes: HWIO [1, 2, 2, 3] to OIHW [3, 2, 1, 2]', () => {
  // Each value is its own flat index in the input: in[0, w, i, o] = w·6 + i·3 + o.
  const q = Uint8Array.from({length: 12}, (_, k) => k)
  const out = permute({q, dims: [1, 2, 2, 3], min: 0, scale: 1}, [3, 2, 0, 1])
  assert.equal(out.dims, [3, 2, 1, 2])
  const expected: number[] = []
  for (let o = 0; o < 3; o++) for (let i = 0; i < 2; i++) for (let w = 0; w < 2; w++) expected.push(w * 6 + i * 3 + o)
  assert.equal(Array.from(out.q), expected)
})

test('the converter writes the committed model again, byte for byte', async () => {
  const written = await writeNsfwModel(dir)
  const committed = JSON.parse(await readFile(join(NSFW_MODEL_DIR, 'manifest.json'), 'utf8'))
  assert.equal(written, committed)
  const bytes = await readFile(join(dir, NSFW_ONNX))
  assert.is(sha256(bytes), committed.sha256)
  assert.is(bytes.length, committed.size)
  assert.is(sha256(await readFile(join(NSFW_MODEL_DIR, NSFW_ONNX))), committed.sha256)
  assert.is(await readFile(join(dir, 'LICENSE'), 'utf8'), await readFile(join(NSFW_MODEL_DIR, 'LICENSE'), 'utf8'))
  assert.is(await readFile(join(dir, 'manifest.json'), 'utf8'), await readFile(join(NSFW_MODEL_DIR, 'manifest.json'), 'utf8'))
})

test('the licence file carries nsfwjs\'s MIT notice and copyright line', async () => {
  const licence = await readFile(join(NSFW_MODEL_DIR, 'LICENSE'), 'utf8')
  assert.match(licence, /^MIT License$/m)
  assert.match(licence, /^Copyright \(c\) 2019 Infinite Red, Inc\.$/m)
})

test.run()

import {copyFile, mkdtemp, readdir, readFile, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {DEFAULT_LIMITS} from '../../../../src/lib/config/settings.js'
import {decodeImage} from '../../../../src/lib/image/decode.js'
import {NSFW_VIEW_SIZE, nsfwPreprocess} from '../../../../src/lib/signals/nsfw/preprocess.js'
import {nsfwModelDir, openNsfw} from '../../../../src/lib/signals/nsfw/model.js'
import {NSFW_CLASSES} from '../../../../src/lib/signals/nsfw/manifest.js'
import {rejection} from '../../../helpers/errors.js'

const model = await openNsfw({threads: 1})
const dirs: string[] = []

test.after(async () => {
  await model.close()
  await Promise.all(dirs.map((d) => rm(d, {recursive: true, force: true})))
})

/** nsfwjs's own output (MobileNetV2 on @tensorflow/tfjs, CPU backend) for the same pixels. */
const GREY_128 = [0.83706009, 0.0236319, 0.12920287, 0.00856919, 0.00153594]
const CHELSEA = [0.00070883, 0.00072313, 0.92230546, 0.07230373, 0.0039588]

async function expectModError(work: () => Promise<unknown>, code: string, message: RegExp): Promise<void> {
  const e = await rejection(work())
  assert.is(e.code, code)
  assert.match(e.message, message)
}

function near(actual: Float32Array, expected: number[], what: string): void {
  assert.is(actual.length, NSFW_CLASSES.length)
  actual.forEach((p, i) => assert.ok(Math.abs(p - expected[i]) < 1e-4, `${what} ${NSFW_CLASSES[i]}: ${p} vs nsfwjs ${expected[i]}`))
}

async function chelsea() {
  const [img] = await decodeImage(await readFile('test/fixtures/photos/chelsea.jpg'), DEFAULT_LIMITS)
  return img
}

test('classifies a uniform grey image and a photo of a cat as nsfwjs does', async () => {
  const grey = nsfwPreprocess({data: Buffer.alloc(224 * 224 * 3, 128), width: 224, height: 224})
  near((await model.classify(grey, 1))[0], GREY_128, 'grey')
  const [cat] = await model.classify(nsfwPreprocess(await chelsea()), 1)
  near(cat, CHELSEA, 'chelsea')
  assert.is(NSFW_CLASSES[cat.indexOf(Math.max(...cat))], 'Neutral')
})

test('with a cache folder the session starts from the cached optimised graph and classifies as before', async () => {
  const cacheDir = await mkdtemp(join(tmpdir(), 'mod-nsfw-cache-'))
  dirs.push(cacheDir)
  const cat = nsfwPreprocess(await chelsea())
  for (const round of ['builds the entry', 'starts from it']) {
    const cached = await openNsfw({threads: 1, cacheDir})
    try {
      near((await cached.classify(cat, 1))[0], CHELSEA, `chelsea, cache ${round}`)
    } finally {
      await cached.close()
    }
    const [entry] = await readdir(join(cacheDir, 'ort'))
    assert.equal((await readdir(join(cacheDir, 'ort', entry))).sort(), ['model.onnx', 'weights.bin'])
  }
})

test('a batch gives each view the probabilities it gets alone; the flipped cat is still Neutral', async () => {
  const cat = await chelsea()
  const flipped = Buffer.alloc(cat.data.length)
  for (let y = 0; y < cat.height; y++) {
    for (let x = 0; x < cat.width; x++) cat.data.copy(flipped, 3 * (y * cat.width + cat.width - 1 - x), 3 * (y * cat.width + x), 3 * (y * cat.width + x) + 3)
  }
  const batch = new Float32Array(2 * NSFW_VIEW_SIZE)
  nsfwPreprocess(cat, {out: batch})
  nsfwPreprocess({...cat, data: flipped}, {out: batch, offset: NSFW_VIEW_SIZE})
  const [view, mirrored] = await model.classify(batch, 2)
  near(view, CHELSEA, 'chelsea in a batch')
  const sum = mirrored.reduce((a, b) => a + b, 0)
  assert.ok(Math.abs(sum - 1) < 1e-5, `probabilities sum to ${sum}`)
  assert.ok(mirrored[2] > 0.5, `mirrored Neutral ${mirrored[2]}`)
  assert.equal(await model.classify(new Float32Array(0), 0), [])
})

test('refuses a tensor of the wrong size', async () => {
  await expectModError(() => model.classify(new Float32Array(NSFW_VIEW_SIZE - 1), 1), 'internal', /expected 1 x 224 x 224 x 3 values/)
})

async function copyOfModel(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'mod-nsfw-'))
  dirs.push(dir)
  const src = nsfwModelDir()
  await copyFile(join(src, 'manifest.json'), join(dir, 'manifest.json'))
  await copyFile(join(src, 'nsfw-mobilenet-v2.onnx'), join(dir, 'nsfw-mobilenet-v2.onnx'))
  return dir
}

test('a model file that is not the one in the manifest is model_missing, naming the file and the hashes', async () => {
  const dir = await copyOfModel()
  const path = join(dir, 'nsfw-mobilenet-v2.onnx')
  const bytes = await readFile(path)
  bytes[bytes.length - 1] ^= 1
  await writeFile(path, bytes)
  await expectModError(() => openNsfw({dir}), 'model_missing', /nsfw-mobilenet-v2\.onnx has sha256 [0-9a-f]{64}, not the [0-9a-f]{64} of nsfwjs-mobilenet-v2; reinstall mod/)
  await writeFile(path, bytes.subarray(1))
  await expectModError(() => openNsfw({dir}), 'model_missing', /is 2\.73 MiB \(2 862 360 bytes\), not the 2\.73 MiB \(2 862 361 bytes\) of nsfwjs-mobilenet-v2/)
})

test('a manifest that lists no entry for the chosen model is model_missing', async () => {
  const dir = await copyOfModel()
  const manifest = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) as {models: {id: string}[]}
  await writeFile(join(dir, 'manifest.json'), JSON.stringify({models: manifest.models.filter((m) => m.id !== 'nsfwjs-inception-v3')}))
  await expectModError(() => openNsfw({dir, model: 'inception_v3'}), 'model_missing', /manifest\.json lists no model nsfwjs-inception-v3; reinstall mod/)
})

test('a missing model file or manifest is model_missing', async () => {
  const dir = await copyOfModel()
  await rm(join(dir, 'nsfw-mobilenet-v2.onnx'))
  await expectModError(() => openNsfw({dir}), 'model_missing', /NSFW model's file .* cannot be read \(ENOENT\)/)
  await expectModError(() => openNsfw({dir: join(dir, 'nowhere')}), 'model_missing', /NSFW model's manifest .* cannot be read/)
})

test.run()

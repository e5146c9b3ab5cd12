import {mkdir, mkdtemp, readFile, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {writeToyModel} from '../../../scripts/fixtures.js'
import {PRESETS} from '../../../src/lib/policy/types.js'
import {loadManifest, parseManifest} from '../../../src/lib/model/manifest.js'
import {listPresets, loadPresetManifest, presetManifestPath, resolveModelDir} from '../../../src/lib/model/presets.js'
import {rejection} from '../../helpers/errors.js'

const root = await mkdtemp(join(tmpdir(), 'mod-manifest-'))
const toyDir = join(root, 'toy')
const toy = await writeToyModel(toyDir)

function thrown(fn: () => unknown): Error & {code?: string} {
  let e: unknown
  try {
    fn()
  } catch (err) {
    e = err
  }
  assert.instance(e, Error, 'expected a throw')
  return e as Error & {code?: string}
}

/** The toy manifest as plain JSON, with one change applied. */
function variant(change: (m: Record<string, any>) => void): unknown {
  const m = JSON.parse(JSON.stringify(toy)) as Record<string, any>
  change(m)
  return m
}

test('loads the manifest of a complete model folder', async () => {
  const m = await loadManifest(toyDir, 'fast')
  assert.is(m.id, 'toy-clip')
  assert.is(m.embedding_size, 8)
  assert.equal(m.image, {input: 'pixel_values', output: 'image_embeds'})
  assert.equal(m.text, {input: 'input_ids', output: 'text_embeds'})
  assert.equal(m.files, toy.files)
})

test('a missing folder is model_missing naming `mod models pull fast`', async () => {
  const dir = join(root, 'nowhere', 'fast')
  const err = await rejection(loadManifest(dir, 'fast'))
  assert.is(err.code, 'model_missing')
  assert.is(
    err.message,
    `model 'fast' is not installed in ${dir}: run \`mod models pull fast\` (or set MOD_MODEL_DIR to a model folder)`,
  )
})

test('a folder without manifest.json is not an installed model', async () => {
  const dir = join(root, 'half')
  await writeToyModel(dir)
  await rm(join(dir, 'manifest.json'))
  const err = await rejection(loadManifest(dir, 'balanced'))
  assert.is(err.code, 'model_missing')
  assert.match(err.message, /run `mod models pull balanced`/)
})

test('a missing encoder file is model_missing naming the file', async () => {
  const dir = join(root, 'no-vision')
  await writeToyModel(dir)
  await rm(join(dir, 'onnx', 'vision_model.onnx'))
  const err = await rejection(loadManifest(dir, 'fast'))
  assert.is(err.code, 'model_missing')
  assert.match(err.message, /\(onnx\/vision_model\.onnx is missing\): run `mod models pull fast`/)
})

test('a manifest that is not JSON is invalid_config with its path', async () => {
  const dir = join(root, 'bad-json')
  await mkdir(dir, {recursive: true})
  await writeFile(join(dir, 'manifest.json'), '{"id": ')
  const err = await rejection(loadManifest(dir, 'fast'))
  assert.is(err.code, 'invalid_config')
  assert.ok(err.message.startsWith(`${join(dir, 'manifest.json')}: not valid JSON`), err.message)
})

test('a listed file of another size than the manifest records is damaged: model_unavailable saying to pull again', async () => {
  const dir = join(root, 'truncated')
  await writeToyModel(dir)
  const vision = toy.files.find((f) => f.role === 'image_encoder') as {path: string; size: number}
  const path = join(dir, vision.path)
  await writeFile(path, (await readFile(path)).subarray(0, 300))
  const e = await rejection(loadManifest(dir, 'fast'))
  assert.is(e.code, 'model_unavailable')
  assert.is(e.message, `${path} is 300 bytes, not the ${vision.size} its manifest.json records: the file is damaged or cut short; run \`mod models pull fast\` again`)
  // A folder of the user's (MOD_MODEL_DIR) is not pulled: it is copied.
  assert.match((await rejection(loadManifest(dir))).message, 'cut short; copy the whole model folder there again')
})

test('a manifest of the wrong shape is invalid_config naming the field', () => {
  const cases: [unknown, string][] = [
    [variant((m) => delete m.id), 'id: expected a name of letters, digits, \'-\', \'_\' and \'.\' that does not start with \'.\', at most 128 characters'],
    // The id names the model's folder of prompt embeddings (prompts/<id>/), which scan writes and remove deletes.
    ...['..', '.', '.hidden', 'org/name', '../../x', 'a\\b', 'x'.repeat(129)].map((id): [unknown, string] => [variant((m) => (m.id = id)), 'id: expected a name of letters, digits, \'-\', \'_\' and \'.\' that does not start with \'.\', at most 128 characters']),
    [variant((m) => (m.family = 'siglip')), 'family: expected "clip"'],
    [variant((m) => (m.embedding_size = 0)), 'embedding_size: expected a whole number >= 1'],
    [variant((m) => (m.preprocess.std = [1, 0, 1])), 'preprocess.std: expected three positive numbers'],
    [variant((m) => (m.preprocess.resample = 'nearest')), 'preprocess.resample: expected "bicubic" or "bilinear"'],
    [variant((m) => (m.preprocess.crop = 300)), 'preprocess.crop: expected at most preprocess.resize (224)'],
    [variant((m) => (m.text = {input: 'input_ids'})), 'text.output: expected a non-empty string'],
    [variant((m) => (m.files = [])), 'files: expected a non-empty list'],
    [variant((m) => (m.files[0].path = '../escape.onnx')), 'files[0].path: expected a relative path inside the model folder'],
    [variant((m) => (m.files[0].path = '/etc/passwd')), 'files[0].path: expected a relative path inside the model folder'],
    [variant((m) => (m.files[0].path = 'manifest.json')), 'files[0].path: expected a relative path inside the model folder'],
    [variant((m) => (m.files[0].role = 'weights')), 'files[0].role: expected one of image_encoder, text_encoder, tokenizer, config'],
    [variant((m) => (m.files[0].url = 'ftp://example.com/x')), 'files[0].url: expected an http(s) URL'],
    [variant((m) => (m.files[0].sha256 = 'ABC')), 'files[0].sha256: expected 64 lower-case hex digits'],
    [variant((m) => (m.files[1].role = 'image_encoder')), 'files: expected exactly one file with role "image_encoder"'],
    [variant((m) => m.files.push({...m.files[2]})), 'files: expected distinct paths ("vocab.json" is listed twice)'],
    [[1, 2], 'manifest: expected an object'],
  ]
  for (const [value, message] of cases) {
    const err = thrown(() => parseManifest(value, 'x/manifest.json'))
    assert.is(err.code, 'invalid_config')
    assert.is(err.message, `x/manifest.json: ${message}`)
  }
})

test('every preset manifest in models/ is valid and names a real export with download URLs', async () => {
  const expected = {fast: 512, balanced: 512, accurate: 768}
  for (const preset of PRESETS) {
    const m = await loadPresetManifest(preset)
    assert.is(m.embedding_size, expected[preset], preset)
    assert.is(m.context_length, 77)
    assert.is(m.preprocess.crop, 224)
    assert.equal(m.image, {input: 'pixel_values', output: 'image_embeds'})
    assert.equal(m.text, {input: 'input_ids', output: 'text_embeds'})
    const paths = m.files.map((f) => f.path)
    for (const p of ['onnx/vision_model.onnx', 'onnx/text_model.onnx', 'tokenizer.json', 'config.json', 'preprocessor_config.json']) {
      assert.ok(paths.includes(p), `${preset} lists ${p}`)
    }
    for (const f of m.files) assert.match(f.url ?? '', /^https:\/\/huggingface\.co\/Xenova\/clip-vit-[\w-]+\/resolve\//)
    assert.ok(presetManifestPath(preset).endsWith(join('models', `${preset}.json`)))
  }
})

test('resolveModelDir: MOD_MODEL_DIR wins, else the preset folder under the cache', () => {
  assert.is(resolveModelDir({cacheDir: '/c'}, 'accurate'), join('/c', 'accurate'))
  assert.is(resolveModelDir({cacheDir: '/c', modelDir: '/m'}, 'accurate'), '/m')
})

test('listPresets tells installed presets from missing ones', async () => {
  const cache = join(root, 'cache')
  const fast = await loadPresetManifest('fast')
  // A folder holding the fast preset's id counts as installed; a folder with another model's id does not.
  await writeToyModel(join(cache, 'fast'))
  const manifestPath = join(cache, 'fast', 'manifest.json')
  const installed = JSON.parse(await readFile(manifestPath, 'utf8')) as Record<string, unknown>
  await writeFile(manifestPath, JSON.stringify({...installed, id: fast.id}))
  await writeToyModel(join(cache, 'balanced'))

  const list = await listPresets(cache)
  assert.equal(
    list.map((p) => [p.preset, p.installed, p.dir]),
    [
      ['fast', true, join(cache, 'fast')],
      ['balanced', false, join(cache, 'balanced')],
      ['accurate', false, join(cache, 'accurate')],
    ],
  )
  assert.is(list[0].id, fast.id)
  assert.is(list[0].size, toy.files.reduce((n, f) => n + (f.size ?? 0), 0))
  assert.is(list[2].id, 'clip-vit-large-patch14')
})

test.after(async () => {
  await rm(root, {recursive: true, force: true})
})

test.run()

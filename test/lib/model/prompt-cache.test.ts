import {mkdir, mkdtemp, readdir, readFile, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {dirname, join} from 'node:path'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {embedPrompts, promptCachePath} from '../../../src/lib/model/prompt-cache.js'

const root = await mkdtemp(join(tmpdir(), 'mod-prompts-'))
let n = 0
const freshDir = (): string => join(root, `cache-${n++}`)

/** A fake text encoder: a distinct vector per text, recording every call. */
function recorder(dim = 4) {
  const calls: string[][] = []
  const embed = async (texts: string[]): Promise<Float32Array[]> => {
    calls.push([...texts])
    return texts.map((t) => Float32Array.from({length: dim}, (_, i) => t.length + i / 10))
  }
  return {calls, embed}
}

const vec = (t: string, dim = 4): number[] => Array.from(Float32Array.from({length: dim}, (_, i) => t.length + i / 10))

test('a cold start embeds every distinct prompt once; a warm start calls the encoder zero times', async () => {
  const cacheDir = freshDir()
  const cold = recorder()
  const first = await embedPrompts(['a gun', 'a knife', 'a gun'], {cacheDir, modelId: 'toy-clip', embed: cold.embed})
  assert.equal(cold.calls, [['a gun', 'a knife']])
  assert.equal([...first.keys()], ['a gun', 'a knife'])

  const warm = recorder()
  const second = await embedPrompts(['a knife', 'a gun'], {cacheDir, modelId: 'toy-clip', embed: warm.embed})
  assert.is(warm.calls.length, 0)
  assert.equal(Array.from(second.get('a gun') as Float32Array), vec('a gun'))
  assert.equal(Array.from(second.get('a knife') as Float32Array), vec('a knife'))
})

test('a new prompt calls the encoder only for that prompt', async () => {
  const cacheDir = freshDir()
  await embedPrompts(['red', 'green'], {cacheDir, modelId: 'm', embed: recorder().embed})
  const r = recorder()
  const out = await embedPrompts(['red', 'blue', 'green'], {cacheDir, modelId: 'm', embed: r.embed})
  assert.equal(r.calls, [['blue']])
  assert.equal(Array.from(out.get('blue') as Float32Array), vec('blue'))
  const again = recorder()
  await embedPrompts(['blue', 'red'], {cacheDir, modelId: 'm', embed: again.embed})
  assert.is(again.calls.length, 0)
})

test('the cache is keyed by model id: another model embeds again', async () => {
  const cacheDir = freshDir()
  await embedPrompts(['red'], {cacheDir, modelId: 'model-a', embed: recorder().embed})
  const r = recorder()
  await embedPrompts(['red'], {cacheDir, modelId: 'model-b', embed: r.embed})
  assert.equal(r.calls, [['red']])
})

test('lives under <cacheDir>/prompts/<model id>/ with the id made path-safe', async () => {
  const cacheDir = freshDir()
  await embedPrompts(['red'], {cacheDir, modelId: 'org/clip:v1', embed: recorder().embed})
  const path = promptCachePath(cacheDir, 'org/clip:v1')
  assert.is(path, join(cacheDir, 'prompts', 'org_clip_v1', 'embeddings.json'))
  const file = JSON.parse(await readFile(path, 'utf8')) as {model: string; dim: number; entries: Record<string, string>}
  assert.is(file.model, 'org/clip:v1')
  assert.is(file.dim, 4)
  assert.is(Object.keys(file.entries).length, 1)
  // Written by rename: no temporary file is left beside it.
  assert.equal(await readdir(dirname(path)), ['embeddings.json'])
})

test('a corrupt cache file is ignored and rebuilt', async () => {
  const cacheDir = freshDir()
  const path = promptCachePath(cacheDir, 'm')
  await mkdir(dirname(path), {recursive: true})
  await writeFile(path, '{"version": 1, "model": "m", "dim": 4, "entr')
  const r = recorder()
  const out = await embedPrompts(['red'], {cacheDir, modelId: 'm', embed: r.embed})
  assert.equal(r.calls, [['red']])
  assert.equal(Array.from(out.get('red') as Float32Array), vec('red'))
  const warm = recorder()
  await embedPrompts(['red'], {cacheDir, modelId: 'm', embed: warm.embed})
  assert.is(warm.calls.length, 0)
})

test('an entry of the wrong length invalidates the file instead of yielding a short vector', async () => {
  const cacheDir = freshDir()
  await embedPrompts(['red'], {cacheDir, modelId: 'm', embed: recorder().embed})
  const path = promptCachePath(cacheDir, 'm')
  const file = JSON.parse(await readFile(path, 'utf8')) as {entries: Record<string, string>}
  for (const k of Object.keys(file.entries)) file.entries[k] = Buffer.from([1, 2, 3]).toString('base64')
  await writeFile(path, JSON.stringify(file))
  const r = recorder()
  const out = await embedPrompts(['red'], {cacheDir, modelId: 'm', embed: r.embed})
  assert.equal(r.calls, [['red']])
  assert.is((out.get('red') as Float32Array).length, 4)
})

test('vectors of a new size replace the old ones of the same model id', async () => {
  const cacheDir = freshDir()
  await embedPrompts(['red', 'green'], {cacheDir, modelId: 'm', embed: recorder(4).embed})
  const r = recorder(8)
  const out = await embedPrompts(['blue'], {cacheDir, modelId: 'm', embed: r.embed})
  assert.is((out.get('blue') as Float32Array).length, 8)
  const again = recorder(8)
  await embedPrompts(['red'], {cacheDir, modelId: 'm', embed: again.embed})
  assert.equal(again.calls, [['red']])
})

test('an unwritable cache folder still returns the embeddings', async () => {
  const blocker = join(freshDir(), 'file')
  await mkdir(dirname(blocker), {recursive: true})
  await writeFile(blocker, 'not a folder')
  const r = recorder()
  const out = await embedPrompts(['red'], {cacheDir: blocker, modelId: 'm', embed: r.embed})
  assert.equal(Array.from(out.get('red') as Float32Array), vec('red'))
})

test('no prompts: the encoder is not called', async () => {
  const r = recorder()
  const out = await embedPrompts([], {cacheDir: freshDir(), modelId: 'm', embed: r.embed})
  assert.is(out.size, 0)
  assert.is(r.calls.length, 0)
})

test.after(async () => {
  await rm(root, {recursive: true, force: true})
})

test.run()

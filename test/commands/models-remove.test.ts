// `mod models remove <preset>`: the folder under the cache and what mod derived from its files elsewhere in it, and
// nothing else; a folder another process is installing into is left alone.
import {cpSync, existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {promptCachePath} from '../../src/lib/model/prompt-cache.js'
import {cachePrefix} from '../../src/lib/model/session.js'
import {runInProcess, tempDir, TOY_MODEL} from '../helpers/cli.js'

const dir = tempDir('mod-remove-')
test.after(() => dir.remove())

/** A cache with the toy model installed as `fast`, what scans derive from it, another model's graph and a partial download. */
function cacheWithFast(name: string): {cache: string; derived: string[]; kept: string[]} {
  const cache = join(dir.path, name)
  const fast = join(cache, 'fast')
  mkdirSync(fast, {recursive: true})
  cpSync(TOY_MODEL, fast, {recursive: true})
  mkdirSync(join(fast, '.partial'))
  writeFileSync(join(fast, '.partial', 'extra.onnx.part'), Buffer.alloc(1000))
  const vision = join(fast, 'onnx', 'vision_model.onnx')
  const derived = [
    join(cache, 'ort', `${cachePrefix(vision)}0123456789abcdef`, 'model.onnx'),
    join(cache, 'int8', `${cachePrefix(vision)}source.json`),
    join(cache, 'int8', `${cachePrefix(vision)}${'e'.repeat(64)}.onnx`),
    join(cache, 'ort', `${cachePrefix(join(cache, 'int8', `${cachePrefix(vision)}${'e'.repeat(64)}.onnx`))}fedcba9876543210`, 'model.onnx'),
    promptCachePath(cache, 'toy-clip'),
  ]
  const kept = [join(cache, 'ort', 'nsfw-mobilenet-v2-a40a5faf0b445137-acdedda515092103', 'model.onnx'), promptCachePath(cache, 'another-model'), join(cache, 'balanced', 'manifest.json')]
  for (const path of [...derived, ...kept]) {
    mkdirSync(join(path, '..'), {recursive: true})
    writeFileSync(path, Buffer.alloc(2000))
  }
  return {cache, derived, kept}
}

test('removes the preset folder, a partial download included, and what was derived from its files; nothing else', async () => {
  const {cache, derived, kept} = cacheWithFast('installed')
  const r = await runInProcess(['models', 'remove', 'fast'], {env: {MOD_CACHE_DIR: cache}})
  assert.is(r.code, 0, r.stderr)
  assert.match(r.stdout, new RegExp(`^fast \\(toy-clip\\) removed from ${join(cache, 'fast')}: [\\d.]+ MiB freed\\n$`))
  assert.is(r.stderr, '')
  assert.not.ok(existsSync(join(cache, 'fast')), 'the folder is gone')
  assert.equal(derived.filter(existsSync), [], 'graphs, signed copies and prompt embeddings of its files are gone')
  assert.equal(kept.filter(existsSync), kept, "another model's files are kept")
  const again = await runInProcess(['models', 'remove', 'fast'], {env: {MOD_CACHE_DIR: cache}})
  assert.equal([again.code, again.stdout], [0, `fast is not installed in ${join(cache, 'fast')}: nothing to remove\n`])
})

test('a manifest whose id is ".." removes the preset folder and nothing else: the cache folder was deleted whole', async () => {
  const cache = join(dir.path, 'dotdot')
  for (const name of ['fast', 'balanced', 'other', 'prompts/kept']) mkdirSync(join(cache, name), {recursive: true})
  writeFileSync(join(cache, 'fast', 'manifest.json'), '{"id": ".."}')
  const kept = [join(cache, 'balanced', 'precious.onnx'), join(cache, 'other', 'mydata.txt'), join(cache, 'prompts', 'kept', 'embeddings.json')]
  for (const path of kept) writeFileSync(path, 'keep')
  const r = await runInProcess(['models', 'remove', 'fast'], {env: {MOD_CACHE_DIR: cache}})
  assert.equal([r.code, r.stdout, r.stderr], [0, `fast removed from ${join(cache, 'fast')}: 12 bytes freed\n`, ''])
  assert.not.ok(existsSync(join(cache, 'fast')))
  assert.equal(kept.filter(existsSync), kept)
})

test('a manifest that does not parse (or is null) does not stop the removal of its folder: it was internal, the folder kept', async () => {
  for (const [name, text] of [['corrupt', '{bad'], ['null', 'null']]) {
    const cache = join(dir.path, name)
    mkdirSync(join(cache, 'fast', 'onnx'), {recursive: true})
    writeFileSync(join(cache, 'fast', 'manifest.json'), text)
    writeFileSync(join(cache, 'fast', 'onnx', 'vision_model.onnx'), Buffer.alloc(1000))
    const r = await runInProcess(['models', 'remove', 'fast'], {env: {MOD_CACHE_DIR: cache}})
    assert.equal([r.code, r.stdout, r.stderr], [0, `fast removed from ${join(cache, 'fast')}: ${1000 + text.length} bytes freed\n`, ''], name)
    assert.equal(readdirSync(cache), [], name)
  }
})

test('a folder another mod is installing into is left as it is: exit 2 naming that process', async () => {
  const {cache} = cacheWithFast('locked')
  // The process that started this test's is alive: its pid in the lock is an installer at work.
  writeFileSync(join(cache, 'fast', '.install.lock'), `${process.ppid}\n`)
  const before = readdirSync(join(cache, 'fast')).sort()
  const r = await runInProcess(['models', 'remove', 'fast'], {env: {MOD_CACHE_DIR: cache}})
  assert.is(r.code, 2)
  assert.match(r.stderr, `another mod (process ${process.ppid}) is installing there`)
  assert.equal(readdirSync(join(cache, 'fast')).sort(), before)
})

test('a preset folder that is a link: the link is removed, the folder it names kept', async () => {
  const cache = join(dir.path, 'linked')
  const mine = join(dir.path, 'my-model')
  cpSync(TOY_MODEL, mine, {recursive: true})
  mkdirSync(cache)
  symlinkSync(mine, join(cache, 'fast'))
  const r = await runInProcess(['models', 'remove', 'fast', '--cache-dir', cache])
  assert.equal([r.code, r.stdout], [0, `fast: the link ${join(cache, 'fast')} is removed; the folder it named, ${mine}, is kept\n`])
  assert.equal([existsSync(join(cache, 'fast')), existsSync(join(mine, 'manifest.json'))], [false, true])
})

test('an add-on is removed by its name; an unknown name is a usage error', async () => {
  const cache = join(dir.path, 'addon')
  mkdirSync(join(cache, 'nudenet'), {recursive: true})
  writeFileSync(join(cache, 'nudenet', '320n.onnx'), Buffer.alloc(3000))
  writeFileSync(join(cache, 'nudenet', 'manifest.json'), JSON.stringify({kind: 'detector', id: 'nudenet-320n', files: []}))
  const r = await runInProcess(['models', 'remove', 'nudenet', '--cache-dir', cache])
  assert.equal([r.code, r.stdout], [0, `nudenet (nudenet-320n) removed from ${join(cache, 'nudenet')}: 2.98 KiB freed\n`])
  const unknown = await runInProcess(['models', 'remove', 'huge', '--cache-dir', cache])
  assert.is(unknown.code, 2)
  assert.match(unknown.stderr, 'Expected huge to be one of')
})

test.run()

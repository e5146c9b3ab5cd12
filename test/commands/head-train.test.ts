import {spawnSync} from 'node:child_process'
import {existsSync, readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {parseHead} from '../../src/lib/signals/head/head.js'
import {BIN, runInProcess, tempDir, TOY_MODEL} from '../helpers/cli.js'
import {assertOutRefused, noisyPng, writeImages} from '../helpers/dataset.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const dir = tempDir()
const env = {MOD_MODEL_DIR: TOY_MODEL, MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache'))}
let dataset = ''

test.before(async () => {
  dataset = join(dir.path, 'dataset')
  await writeImages(dataset, 'greenish', [40, 210, 60], 12, 'green')
  await writeImages(dataset, 'safe', [230, 30, 30], 8, 'red', 1)
  await writeImages(dataset, 'safe', [30, 30, 230], 8, 'blue', 2)
  await writeImages(dataset, 'safe', [128, 128, 128], 4, 'grey', 3)
})

test.after(() => dir.remove())

test('head train learns a label no prompt describes, and scan --head then flags green images', async () => {
  const head = join(dir.path, 'head.json')
  const r = await runInProcess(['head', 'train', dataset, '--out', head], {env})
  assert.is(r.code, 0, r.stderr)
  assert.match(r.stdout, /greenish: recall 100\.0%, precision 100\.0%, safe flagged 0\.0% \((1 held-out image|\d+ held-out images), (1 epoch|\d+ epochs)\)/)
  const file = parseHead(readFileSync(head, 'utf8'), head)
  assert.is(file.model_id, 'toy-clip')
  assert.is(file.embedding_size, 8)
  assert.equal(file.labels.map((l) => l.name), ['greenish'])

  const green = join(dir.path, 'green.png')
  const red = join(dir.path, 'red.png')
  writeFileSync(green, await noisyPng(60, 190, 40, 77))
  writeFileSync(red, await noisyPng(220, 40, 40, 78))
  const flagged = await runInProcess(['scan', green, '--head', head, '--json'], {env})
  assert.is(flagged.code, 1, flagged.stderr)
  const [result] = JSON.parse(flagged.stdout)
  assert.equal(result.violations.map((v: {name: string}) => v.name), ['greenish'])
  assert.is(result.labels.find((l: {name: string}) => l.name === 'greenish').origin, 'head')
  assert.is((await runInProcess(['scan', red, '--head', head], {env})).code, 0)

  // The same head measured by eval.
  const e = await runInProcess(['eval', dataset, '--head', head, '--json'], {env})
  assert.is(e.code, 0, e.stderr)
  const greenish = JSON.parse(e.stdout).metrics.labels.find((l: {name: string}) => l.name === 'greenish')
  assert.equal([greenish.recall, greenish.safe_fpr], [1, 0])

  // --out - writes the head on stdout, its figures on stderr, and no file named -.
  const piped = await runInProcess(['head', 'train', dataset, '--out', '-'], {env, cwd: dir.path})
  assert.is(piped.code, 0, piped.stderr)
  assert.equal(parseHead(piped.stdout, 'stdout').labels.map((l) => l.name), ['greenish'])
  assert.match(piped.stderr, 'the head (stdout): 1 label for model')
  assert.not.ok(existsSync(join(dir.path, '-')))
})

test('--out naming a file that is not a head (an image a shell pattern put there) is refused before embedding, exit 2, the file kept; a head is replaced', async () => {
  const image = join(dir.path, 'photo.png')
  const before = await noisyPng(10, 20, 30, 5)
  writeFileSync(image, before)
  const r = await runInProcess(['head', 'train', dataset, '--out', image], {env})
  assertOutRefused(r, image, before, {is: 'a head (a JSON object)', replaces: 'a head'}, 'Embedding')

  const head = join(dir.path, 'again.json')
  writeFileSync(head, '{"an": "earlier head"}\n')
  const again = await runInProcess(['head', 'train', dataset, '--out', head], {env})
  assert.is(again.code, 0, again.stderr)
  assert.equal(parseHead(readFileSync(head, 'utf8'), head).labels.map((l) => l.name), ['greenish'])
})

test('--out /dev/stdout: stdout (a pipe) is the head file alone, the figures on stderr', async () => {
  // A shell's pipe: Node's own child stdio is a socket, which /dev/stdout cannot be opened on.
  const r = spawnSync('/bin/sh', ['-c', '("$@"; echo "exit=$?" >&2) | cat', 'sh', process.execPath, BIN, 'head', 'train', dataset, '--out', '/dev/stdout'], {
    env: {...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MOD_'))), ...env, NO_COLOR: '1'},
    encoding: 'utf8',
  })
  assert.match(r.stderr, /\nexit=0\n$/)
  assert.equal(parseHead(r.stdout, 'stdout').labels.map((l) => l.name), ['greenish'])
  assert.match(r.stderr, /\/dev\/stdout: 1 label for model toy-clip; held-out figures at threshold 0\.5:\n {2}greenish: recall /)
})

test('--out on a full disk (/dev/full) says so, exit 2, not internal', async () => {
  const r = await runInProcess(['head', 'train', dataset, '--out', '/dev/full'], {env})
  assert.equal([r.code, r.stdout], [2, ''])
  assert.match(r.stderr, /\nmod: bad_request: --out \/dev\/full: cannot write it: the disk is full \(ENOSPC\)\n$/)
})

test('a dataset without safe images is refused', async () => {
  const bad = join(dir.path, 'bad')
  await writeImages(bad, 'greenish', [40, 210, 60], 2)
  const r = await runInProcess(['head', 'train', bad, '--out', join(dir.path, 'x.json')], {env})
  assert.is(r.code, 2)
  assert.match(r.stderr, 'no safe/ folder')
})

test('a labels file of safe images alone is refused before any image is embedded, and no head file is written', async () => {
  const safeOnly = join(dir.path, 'safe-only')
  const images = await writeImages(safeOnly, '.', [230, 30, 30], 4, 'red', 4)
  const labels = join(safeOnly, 'marks.csv')
  writeFileSync(labels, `file,labels\n${images.map((p, i) => `${p},${i % 2 ? 'safe' : ''}`).join('\n')}\n`)
  const out = join(dir.path, 'none.json')
  const r = await runInProcess(['head', 'train', labels, '--out', out], {env})
  assert.equal([r.code, r.stdout], [2, ''])
  assert.match(r.stderr, 'no image has a label: a head learns the labels its images have')
  assert.not.match(r.stderr, 'Embedding:')
  assert.not.ok(existsSync(out))
})

test.run()

import {spawnSync} from 'node:child_process'
import {existsSync, readdirSync, readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'
import {parse} from 'yaml'

import {BIN, runInProcess, tempDir, TOY_MODEL} from '../helpers/cli.js'
import {assertOutRefused, noisyPng, writeImages} from '../helpers/dataset.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const dir = tempDir()
const env = {MOD_MODEL_DIR: TOY_MODEL, MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache'))}
// On the toy model, a pale cyan (red channel a little under CLIP's mean) has a raw redness margin near -16;
// a deep cyan, near -70. Both round to a score of 0 with the uncalibrated custom category: the default
// threshold misses every pale image.
const PALE: [number, number, number] = [110, 160, 170]
const DEEP: [number, number, number] = [0, 200, 200]
let policy = ''
let dataset = ''

test.before(async () => {
  policy = join(dir.path, 'policy.yaml')
  // The specialist is switched off: these noisy images pass its gate, and its large model would triple the test's CPU for scores it does not check.
  writeFileSync(policy, '# my policy\nspecialists:\n  nsfw: false\ncategories:\n  redness:\n    prompts: ["red"]   # the toy model sees colours\n  tobacco:\n    enabled: false\n')
  dataset = join(dir.path, 'dataset')
  await writeImages(dataset, 'redness', PALE, 24, 'pale')
  await writeImages(dataset, 'safe', DEEP, 24, 'deep', 1)
})

test.after(() => dir.remove())

test('the default threshold misses the pale images', async () => {
  const r = await runInProcess(['eval', dataset, '--config', policy, '--json'], {env})
  assert.is(r.code, 0, r.stderr)
  const redness = JSON.parse(r.stdout).metrics.labels.find((l: {name: string}) => l.name === 'redness')
  assert.is(redness.recall, 0)
})

test('calibrate writes a valid policy whose threshold catches them with no safe image flagged', async () => {
  const tuned = join(dir.path, 'tuned.yaml')
  const r = await runInProcess(['calibrate', dataset, '--config', policy, '--max-fpr', '0.05', '--out', tuned], {env})
  assert.is(r.code, 0, r.stderr)
  assert.is(r.stdout, '')
  const text = readFileSync(tuned, 'utf8')
  // The file keeps what the user wrote and says how it was fitted.
  assert.match(text, '# my policy')
  assert.match(text, '# the toy model sees colours')
  assert.match(text, /^# Calibrated by mod calibrate on .*dataset: at most 5\.0% of safe images flagged per category\./m)
  assert.match(text, /# held-out recall 100\.0%, precision 100\.0%, safe flagged 0\.0%/)
  const file = parse(text)
  assert.equal(file.categories.tobacco, {enabled: false})
  const {threshold, calibration} = file.categories.redness
  assert.ok(calibration.scale > 0 && threshold > 0 && threshold < 1, JSON.stringify(file.categories.redness))

  const valid = await runInProcess(['policy', 'validate', tuned])
  assert.is(valid.code, 0, valid.stderr)

  const after = await runInProcess(['eval', dataset, '--config', tuned, '--json'], {env})
  const redness = JSON.parse(after.stdout).metrics.labels.find((l: {name: string}) => l.name === 'redness')
  assert.equal([redness.recall, redness.safe_fpr], [1, 0])

  const pale = join(dir.path, 'pale.png')
  const deep = join(dir.path, 'deep.png')
  writeFileSync(pale, await noisyPng(...PALE, 999))
  writeFileSync(deep, await noisyPng(...DEEP, 998))
  assert.is((await runInProcess(['scan', pale, '--config', tuned], {env})).code, 1)
  assert.is((await runInProcess(['scan', deep, '--config', tuned], {env})).code, 0)
})

test('--min-recall and stdout output; the split is seeded and reported', async () => {
  const r = await runInProcess(['calibrate', dataset, '--config', policy, '--min-recall', '0.9', '--seed', '7', '--holdout', '0.25'], {env})
  assert.is(r.code, 0, r.stderr)
  assert.match(r.stdout, '# Calibrated by mod calibrate on')
  assert.match(r.stdout, 'recall at least 90.0% per category')
  assert.match(r.stdout, '(holdout 0.25, seed 7)')
  assert.ok(parse(r.stdout).categories.redness.threshold > 0)
  assert.match(r.stderr, /redness: threshold [\d.]+, scale/)
  // --out - is stdout too: the same policy, no file named -.
  const dashed = await runInProcess(['calibrate', dataset, '--config', policy, '--min-recall', '0.9', '--seed', '7', '--holdout', '0.25', '--out', '-'], {env, cwd: dir.path})
  assert.equal([dashed.code, dashed.stdout], [0, r.stdout], dashed.stderr)
  assert.not.ok(existsSync(join(dir.path, '-')))
})

test('bad targets are usage errors', async () => {
  const r = await runInProcess(['calibrate', dataset, '--config', policy, '--max-fpr', '2'], {env})
  assert.is(r.code, 2)
  assert.match(r.stderr, '--max-fpr must be a number from 0 to 1')
})

test('a labels file of safe images alone is refused before any image is scored, the policy left as it is', async () => {
  const labels = join(dir.path, 'safe-only.csv')
  writeFileSync(labels, 'file,labels\ndataset/safe/deep0.png,safe\ndataset/safe/deep1.png,\n')
  const before = readFileSync(policy, 'utf8')
  const r = await runInProcess(['calibrate', labels, '--config', policy], {env})
  assert.equal([r.code, r.stdout], [2, ''])
  assert.match(r.stderr, 'no image has a label: calibration fits each category on its images')
  assert.not.match(r.stderr, 'Scoring:')
  assert.is(readFileSync(policy, 'utf8'), before)
})

test('--out naming a file that is not a policy (an image, the labels file) is refused before scoring, exit 2, the file kept', async () => {
  const image = join(dir.path, 'photo.png')
  const labels = join(dir.path, 'marks.csv')
  writeFileSync(image, await noisyPng(10, 20, 30, 5))
  writeFileSync(labels, 'file,labels\ndataset/redness/pale0.png,redness\n')
  for (const target of [image, labels]) {
    const before = readFileSync(target)
    const r = await runInProcess(['calibrate', dataset, '--config', policy, '--out', target], {env})
    assertOutRefused(r, target, before, {is: 'a policy (a YAML mapping)', replaces: 'a policy'}, 'Scoring')
  }
  // A policy's beginnings are replaced: comments alone, after a document start.
  const started = join(dir.path, 'started.yaml')
  writeFileSync(started, '---\n# to be tuned\n')
  const r = await runInProcess(['calibrate', dataset, '--config', policy, '--out', started], {env})
  assert.is(r.code, 0, r.stderr)
  assert.ok(parse(readFileSync(started, 'utf8')).categories.redness.threshold > 0)
})

test('a policy written back over --config that the disk cannot take is left whole, and the failure is said, exit 2', async () => {
  // The documented workflow: the file in use, written back with its comments. A file size limit (ulimit -f, a few
  // KiB) fails the write past it as a full disk would, in any file system and for root too.
  const own = join(dir.path, 'own.yaml')
  const before = `# ${'a long note '.repeat(4000)}\n${readFileSync(policy, 'utf8')}`
  writeFileSync(own, before)
  const r = spawnSync('/bin/sh', ['-c', 'ulimit -f 16 && exec "$@"', 'sh', process.execPath, BIN, 'calibrate', dataset, '--config', own, '--out', own], {
    env: {...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MOD_'))), ...env, NO_COLOR: '1'},
    encoding: 'utf8',
  })
  assert.is(r.status, 2, r.stderr)
  assert.is(r.stdout, '')
  assert.match(r.stderr, `mod: bad_request: --out ${own}: cannot write it: larger than a file may be here (EFBIG); the file there was left as it was\n`)
  assert.is(readFileSync(own, 'utf8'), before)
  assert.equal(readdirSync(dir.path).filter((n) => n.endsWith('.tmp')), [])
})

test('eval --report to a full device (/dev/full) says the disk is full, exit 2', async () => {
  const r = await runInProcess(['eval', dataset, '--config', policy, '--report', '/dev/full', '--json'], {env})
  assert.equal([r.code, r.stdout], [2, ''])
  assert.match(r.stderr, /^mod: bad_request: --report \/dev\/full: cannot write it: the disk is full \(ENOSPC\)\n$/m)
})

test.run()

// A name with a line break in it (a dataset's uploaded file, a folder, a path typed) stays on its line in every
// message: no line `mod` prints can start with what the name holds, such as a CI log's workflow command `::error::`.
import {mkdirSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {runCli, runInProcess, solidPng, tempDir, TOY_MODEL, writeRednessPolicy} from '../helpers/cli.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const dir = tempDir('mod-lines-')
test.after(() => dir.remove())
const env = {MOD_MODEL_DIR: TOY_MODEL, MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache'))}
/** What a name holds after its line break: a line of its own would be a GitHub Actions command. */
const FORGED = '::error::INJ'
const NAME = `x\n${FORGED}`
const ESCAPED = `x\\x0a${FORGED}`

/** No line of `text` starts with the forged command, and the escaped name is there. */
function oneLineEach(text: string, what: string): void {
  for (const line of text.split('\n')) assert.not.ok(line.startsWith('::'), `${what}: a line starts with "::":\n${text}`)
  assert.ok(text.includes(ESCAPED), `${what}: no escaped name in:\n${text}`)
}

test.before(async () => {
  writeRednessPolicy(dir.path)
  const png = await solidPng(0, 0, 255, 16, 16)
  mkdirSync(join(dir.path, 'imgs'))
  writeFileSync(join(dir.path, 'imgs', 'a.png'), png)
  mkdirSync(join(dir.path, 'ds', 'safe'), {recursive: true})
  writeFileSync(join(dir.path, 'ds', 'safe', 'a.png'), png)
  writeFileSync(join(dir.path, 'ds', 'safe', `${NAME}.png`), png.subarray(0, 40))
  mkdirSync(join(dir.path, 'ds', 'redness'))
  writeFileSync(join(dir.path, 'ds', 'redness', 'a.png'), await solidPng(240, 20, 20, 16, 16))
  writeFileSync(join(dir.path, `l${NAME}.txt`), 'not-a-hash,x\n')
  writeFileSync(join(dir.path, 'hashes.yaml'), `hash_lists:\n  bad:\n    file: ${JSON.stringify(`l${NAME}.txt`)}\n`)
  writeFileSync(join(dir.path, `${NAME}.yaml`), 'categories:\n  redness:\n    prompts: ["red"]\n')
  mkdirSync(join(dir.path, NAME))
  writeFileSync(join(dir.path, NAME, '.modrc.yaml'), 'categories:\n  redness:\n    prompts: ["red"]\n')
})

test('every error that quotes a path typed is one line on stderr', async () => {
  const runs: string[][] = [
    ['scan', 'imgs', '--config', NAME],
    ['scan', 'imgs', '--baseline', NAME],
    ['scan', 'imgs', '--report', `missing/${NAME}/r.html`],
    ['scan', '--files-from', NAME],
    ['scan', 'imgs', '--model-dir', NAME],
    ['scan-video', NAME],
    ['categories', '--config', NAME],
    ['eval', NAME],
    ['policy', 'validate', NAME],
  ]
  for (const args of runs) {
    const r = await runInProcess(args, {cwd: dir.path, env})
    assert.is(r.code, 2, `${args.join(' ')}: ${r.stderr}`)
    // Steps (eval's) show their titles first; then the error, one line.
    const failure = r.stderr.trimEnd().split('\n').filter((l) => !/^\[\w+\] /.test(l))
    assert.is(failure.length, 1, `${args.join(' ')}:\n${r.stderr}`)
    assert.match(failure[0], /^mod: \w+: /)
    oneLineEach(r.stderr, args.join(' '))
  }
})

test('eval: the line of a skipped file names it on that line', async () => {
  const r = await runCli(['eval', 'ds', '--config', 'policy.yaml'], {cwd: dir.path, env: {...env, CI: '1'}})
  assert.is(r.code, 0, r.stderr)
  const skipped = r.stderr.split('\n').filter((l) => l.startsWith('skipped '))
  assert.is(skipped.length, 1, r.stderr)
  assert.match(skipped[0], `skipped safe/${ESCAPED}.png: unsupported_media: `)
  oneLineEach(r.stderr, 'eval')
})

test('a hash list named by the policy: policy validate and scan --config name it on one line', async () => {
  const validate = await runCli(['policy', 'validate', 'hashes.yaml'], {cwd: dir.path, env})
  assert.is(validate.code, 2)
  assert.equal(validate.stderr.trimEnd().split('\n').length, 1, validate.stderr)
  assert.match(validate.stderr, `l${ESCAPED}.txt:1: not a PDQ hash`)
  oneLineEach(validate.stderr, 'policy validate')
  const scan = await runCli(['scan', 'imgs', '--config', 'hashes.yaml'], {cwd: dir.path, env})
  assert.is(scan.code, 2)
  assert.match(scan.stderr, /^mod: invalid_config: hash list .* line 1: not a PDQ hash[^\n]*\n$/)
  oneLineEach(scan.stderr, 'scan --config')
})

test('policy validate: the valid file is named on one line of stdout', async () => {
  const r = await runInProcess(['policy', 'validate', `${NAME}.yaml`], {cwd: dir.path, env})
  assert.is(r.code, 0, r.stderr)
  assert.match(r.stdout, `${ESCAPED}.yaml: valid\n`)
  oneLineEach(r.stdout, 'policy validate stdout')
})

test('a policy found in a folder whose name breaks the line: the note stays one line', async () => {
  const r = await runInProcess(['categories'], {cwd: join(dir.path, NAME), env})
  assert.is(r.code, 0, r.stderr)
  const notes = r.stderr.split('\n').filter((l) => l.startsWith('mod: policy: '))
  assert.is(notes.length, 1, r.stderr)
  oneLineEach(r.stderr, 'policy found')
})

test('a file with several problems: one line for the headline, one for each problem, each escaped', async () => {
  writeFileSync(join(dir.path, `bad${NAME}.yaml`), 'preset: huge\ncategories:\n  weapons:\n    threshold: 2\n')
  const r = await runInProcess(['scan', 'imgs', '--config', `bad${NAME}.yaml`], {cwd: dir.path, env})
  assert.is(r.code, 2)
  const lines = r.stderr.trimEnd().split('\n')
  assert.is(lines.length, 3, r.stderr)
  assert.ok(lines[0].startsWith('mod: invalid_config: invalid policy file ') && lines[0].endsWith(`bad${ESCAPED}.yaml:`), lines[0])
  assert.match(lines[1], `bad${ESCAPED}.yaml:1:9: preset must be one of`)
  assert.match(lines[2], `bad${ESCAPED}.yaml:4:16: categories.weapons.threshold`)
  oneLineEach(r.stderr, 'invalid policy')
})

test('a dataset with one problem is one line', async () => {
  mkdirSync(join(dir.path, 'empty'))
  const r = await runInProcess(['eval', 'empty'], {cwd: dir.path, env})
  assert.is(r.code, 2)
  assert.match(r.stderr, /\nmod: invalid_config: dataset empty: no safe\/ folder[^\n]*\n$/)
})

test.run()

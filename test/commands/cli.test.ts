import {spawnSync} from 'node:child_process'
import {copyFileSync, cpSync, mkdirSync, rmSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {BIN, ROOT, runCli, runInProcess, tempDir, TOY_MODEL} from '../helpers/cli.js'
import {warmCacheDir} from '../helpers/warm-cache.js'
import {MODEL_SIGNALS} from '../../src/lib/signals/registry.js'

const dir = tempDir()
test.after(() => dir.remove())

test('an unknown flag is one usage line and exit 2, without help text or a stack', async () => {
  const r = await runCli(['scan', '--bogus', 'x.png'])
  assert.is(r.code, 2)
  assert.is(r.stderr, 'mod: usage: Nonexistent flag: --bogus\n')
  assert.is(r.stdout, '')
})

test('-v and --version print the version, as mod version does', async () => {
  const version = await runCli(['version'])
  for (const flag of ['-v', '--version']) {
    const r = await runCli([flag])
    assert.is(r.code, 0, flag)
    assert.is(r.stdout, version.stdout, flag)
    assert.match(r.stdout, /^@mod-moderation\/cli\/\d+\.\d+\.\d+ /)
  }
})

test('eval, calibrate, head train and scan --write-baseline refuse a file they could not write before any work, not after it', async () => {
  const missing = join(dir.path, 'no-such-folder', 'out')
  const cases: [string[], string][] = [
    [['eval', 'dataset', '--report', `${missing}.html`], `--report ${missing}.html: cannot write there (ENOENT)`],
    [['calibrate', 'dataset', '--out', `${missing}.yaml`], `--out ${missing}.yaml: cannot write there (ENOENT)`],
    [['head', 'train', 'dataset', '--out', dir.path], `--out ${dir.path}: is a folder; give a file name`],
    [['scan', 'x.png', '--write-baseline', `${missing}.json`], `--write-baseline ${missing}.json: cannot write there (ENOENT)`],
  ]
  for (const [args, message] of cases) {
    const r = await runInProcess(args)
    assert.is(r.code, 2, args.join(' '))
    assert.is(r.stderr, `mod: bad_request: ${message}\n`)
  }
})

test('stdin given twice as a path is a usage error, for scan and hash: it holds one image', async () => {
  for (const command of ['scan', 'hash']) {
    const r = await runInProcess([command, '-', '-'])
    assert.is(r.code, 2, command)
    assert.is(r.stderr, 'mod: usage: the path - (stdin) is given twice: stdin holds one image\n')
  }
})

test('an on/off flag given a value is a usage error naming it, exit 2, nothing run: --strict=false turned strict on and scanned a file "false"', async () => {
  const cases: [string[], string][] = [
    [['scan', 'x.png', '--strict=false'], '--strict takes no value: write --strict or leave it out'],
    [['scan', 'x.png', '--json=true'], '--json takes no value: write --json or leave it out'],
    [['scan', 'x.png', '--no-color=1'], '--no-color takes no value: write --color or --no-color'],
    [['categories', '--color=false'], '--color takes no value: write --color or --no-color'],
  ]
  for (const [args, message] of cases) {
    const r = await runInProcess(args)
    assert.equal([r.code, r.stdout, r.stderr], [2, '', `mod: usage: ${message}\n`], args.join(' '))
  }
  // After --, it is a path like any other.
  const path = await runInProcess(['scan', '--json', '--', '--strict=false'])
  assert.equal(JSON.parse(path.stdout)[0].error.code, 'not_found')
})

test('a missing argument and a bad option are usage errors in the same style', async () => {
  const missing = await runInProcess(['models', 'pull'])
  assert.is(missing.code, 2)
  assert.is(missing.stderr, 'mod: usage: mod models pull needs <preset> (fast|balanced|accurate|nudenet): the preset (or add-on) to download; see mod models pull --help\n')
  const option = await runInProcess(['scan', 'x.png', '--preset', 'huge'])
  assert.is(option.code, 2)
  assert.is(option.stderr, 'mod: usage: Expected --preset=huge to be one of: fast, balanced, accurate\n')
  const both = await runInProcess(['scan', 'x.png', '--json', '--ndjson'])
  assert.is(both.code, 2)
  assert.is(both.stderr, 'mod: usage: --json and --ndjson cannot be used together\n')
})

/** What `mod serve` with `env` prints as it refuses to start, after checking that it exits 2. */
async function serveRefusal(env: Record<string, string>): Promise<string> {
  const r = await runInProcess(['serve', '--port', '0'], {env})
  assert.is(r.code, 2)
  return r.stderr
}

test('mod serve with a malformed MOD_API_KEYS does not start: exit 2 naming the entry, never the key', async () => {
  assert.is(
    await serveRefusal({MOD_API_KEYS: 'alice:k1,hunter2'}),
    'mod: invalid_config: MOD_API_KEYS is not valid: entry 2 has no ":" between a name and a key; expected name:key pairs separated by commas, e.g. "alice:KEY1,bob:KEY2"\n',
  )
})

test('mod serve with a MOD_API_KEY of whitespace alone does not start: exit 2, one invalid_config line', async () => {
  assert.is(
    await serveRefusal({MOD_API_KEY: ' \n'}),
    'mod: invalid_config: MOD_API_KEY is not valid: it holds only whitespace; give the key, or leave MOD_API_KEY empty or unset to need no key\n',
  )
})

test('mod serve with a MOD_API_KEY that clients cannot send alike (not printable ASCII) does not start: exit 2, naming no key', async () => {
  assert.is(
    await serveRefusal({MOD_API_KEY: 'pässwort'}),
    'mod: invalid_config: MOD_API_KEY is not valid: it holds a character other than printable ASCII, which HTTP clients do not send alike in a header; use letters, digits and punctuation\n',
  )
})

test('a flag value taken from its MOD_* variable names the variable when it is invalid', async () => {
  const threads = await runInProcess(['categories'], {env: {MOD_THREADS: 'abc'}})
  assert.is(threads.code, 2)
  assert.is(threads.stderr, 'mod: invalid_config: MOD_THREADS="abc" is not valid: expected a whole number from 1 to 256\n')
  const preset = await runInProcess(['categories'], {env: {MOD_PRESET: 'fastest'}})
  assert.is(preset.stderr, 'mod: invalid_config: MOD_PRESET="fastest" is not valid: expected one of: fast, balanced, accurate; did you mean fast?\n')
  const limit = await runInProcess(['scan', 'x.png'], {env: {MOD_MAX_BYTES: 'lots'}})
  assert.is(limit.code, 2)
  assert.is(limit.stderr, 'mod: invalid_config: MOD_MAX_BYTES="lots" is not valid: expected a size in whole bytes from 1 to 9007199254740991, or with a unit: 26214400, 25MB, 1.5GiB\n')
})

test('a whole-number variable with spaces around its value is read as the number, as the other variables are', async () => {
  const env = {MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'spaced-cache'))}
  const spaced = await runInProcess(['categories'], {env: {...env, MOD_THREADS: ' 2 '}})
  assert.is(spaced.stderr, '')
  assert.is(spaced.code, 0)
  const zero = await runInProcess(['categories'], {env: {...env, MOD_THREADS: ' 0 '}})
  assert.is(zero.code, 2)
  assert.is(zero.stderr, 'mod: invalid_config: MOD_THREADS=" 0 " is not valid: expected a whole number from 1 to 256\n')
  const flag = await runInProcess(['categories', '--threads', '3 '], {env})
  assert.is(flag.code, 0)
})

test('a mistyped command suggests the closest one, exit 2; a far one only points at help', async () => {
  const near = await runCli(['scna'])
  assert.is(near.code, 2)
  assert.is(near.stderr, 'mod: usage: scna is not a mod command; did you mean `mod scan`? (`mod help` lists them)\n')
  const topic = await runCli(['models', 'pul'])
  assert.match(topic.stderr, 'did you mean `mod models pull`?')
  const withArgs = await runCli(['scna', 'photos'])
  assert.is(withArgs.code, 2)
  assert.is(withArgs.stderr, 'mod: usage: scna photos is not a mod command; did you mean `mod scan photos`? (`mod help` lists them)\n')
  const subcommand = await runCli(['models', 'pul', 'fast'])
  assert.is(subcommand.stderr, 'mod: usage: models pul fast is not a mod command; did you mean `mod models pull fast`? (`mod help` lists them)\n')
  const far = await runCli(['xyzzyabc'])
  assert.is(far.code, 2)
  assert.is(far.stderr, 'mod: usage: xyzzyabc is not a mod command (`mod help` lists them)\n')
})

test('a mistyped flag or value gets the nearest one in the same line, exit 2, and nothing runs', async () => {
  const flag = await runInProcess(['scan', 'x.png', '--jsn'])
  assert.is(flag.code, 2)
  assert.is(flag.stderr, 'mod: usage: Nonexistent flag: --jsn; did you mean --json?\n')
  assert.is(flag.stdout, '')
  const preset = await runInProcess(['models', 'pull', 'fst'])
  assert.is(preset.code, 2)
  assert.is(preset.stderr, 'mod: usage: Expected fst to be one of: fast, balanced, accurate, nudenet; did you mean fast?\n')
  const only = await runInProcess(['scan', 'x.png', '--only', 'nsf'])
  assert.is(only.stderr, `mod: usage: Expected --only=nsf to be one of: ${MODEL_SIGNALS.map((s) => s.name).join(', ')}; did you mean nsfw?\n`)
  const far = await runInProcess(['scan', 'x.png', '--zzzzzzzz'])
  assert.is(far.stderr, 'mod: usage: Nonexistent flag: --zzzzzzzz\n')
})

test('a missing --model-dir, or a folder that holds no model, says exactly that', async () => {
  const none = await runInProcess(['scan', 'x.png', '--model-dir', join(dir.path, 'nope')])
  assert.is(none.code, 2)
  assert.is(none.stderr, `mod: model_missing: the model folder ${join(dir.path, 'nope')} (MOD_MODEL_DIR, --model-dir) does not exist\n`)
  const empty = await runInProcess(['scan', 'x.png'], {env: {MOD_MODEL_DIR: dir.path}})
  assert.match(empty.stderr, `mod: model_missing: the model folder ${dir.path} (MOD_MODEL_DIR, --model-dir) is not a model folder: it has no manifest.json`)
  // A folder that lacks a file its manifest lists: it was told to pull a preset or to set MOD_MODEL_DIR, which it had
  // set, and categories said nothing of the folder and named the preset's model.
  const partial = join(dir.path, 'partial')
  cpSync(TOY_MODEL, partial, {recursive: true})
  rmSync(join(partial, 'tokenizer.json'))
  const expected = `mod: model_missing: the model folder ${partial} (MOD_MODEL_DIR, --model-dir) lacks tokenizer.json, which its manifest.json lists: copy the whole model folder there again\n`
  for (const args of [['scan', 'x.png'], ['categories']]) {
    const r = await runInProcess(args, {env: {MOD_MODEL_DIR: partial}})
    assert.equal([r.code, r.stdout, r.stderr], [2, '', expected], args[0])
  }
})

test('-h shows each flag with its variable and default, then environment variables and exit codes', async () => {
  const r = await runInProcess(['scan', '-h'])
  assert.is(r.code, 0)
  assert.match(r.stdout, /--cache-dir=DIR\s+\[default: ~\/\.cache\/mod, env: MOD_CACHE_DIR\]/)
  assert.match(r.stdout, /--precision=WEIGHTS\s+\[default: fp32, env: MOD_PRECISION\]/)
  // The one variable of the model settings without a flag of its own is named by the flag it tunes.
  assert.match(r.stdout.replace(/\s+/g, ' '), /MOD_INT8_WEIGHTS=signed\|unsigned overrides/)
  assert.match(r.stdout, /ENVIRONMENT VARIABLES\n\s+MOD_MAX_BYTES\s+largest image file/)
  assert.match(r.stdout, /EXIT CODES\n\s+0\s+success.*\n\s+1\s+a violation was found\n\s+2\s+usage[\s\S]*?\n\s+129\s+stopped by SIGHUP.*\n\s+130\s+stopped by Ctrl-C.*\n\s+141\s+the reader of stdout went away.*\n\s+143\s+stopped by SIGTERM/)
  const serve = await runInProcess(['serve', '--help'])
  assert.match(serve.stdout, /--port=<value>\s+\[default: 8000, env: MOD_PORT\]/)
  assert.match(serve.stdout, /MOD_API_KEY\s+the X-API-Key value/)
})

test("--only's help names every signal that can run alone, with the registry's title for it", async () => {
  const r = await runInProcess(['scan', '--help'])
  const only = (r.stdout.split(/\n  --only=SIGNAL\s+/)[1] ?? '').split(/\n\s*\n|\n  -/)[0].replace(/\s+/g, ' ')
  assert.ok(MODEL_SIGNALS.some((s) => s.name === 'codes'))
  for (const s of MODEL_SIGNALS) assert.ok(only.includes(`${s.name} (${s.title})`), `${s.name} in: ${only}`)
})

test('mod scan --help fits in 100 lines, the common flags first, and points to the docs for the rest', () => {
  // A real process writing to a pipe, as in a CI log: oclif wraps to its default 80 columns.
  const r = spawnSync(process.execPath, [BIN, 'scan', '--help'], {encoding: 'utf8', env: {...process.env, OCLIF_COLUMNS: ''}})
  assert.is(r.status, 0)
  const lines = r.stdout.trimEnd().split('\n')
  assert.ok(lines.length <= 100, `${lines.length} lines`)
  const headers = lines.filter((l) => /^[A-Z][A-Z ]+$/.test(l))
  assert.equal(headers.slice(0, 4), ['USAGE', 'ARGUMENTS', 'FLAGS', 'CI FLAGS'])
  const common = r.stdout.split('\nFLAGS\n')[1].split('\n\n')[0]
  for (const flag of ['--format=FORMAT', '--json', '--ndjson', '--exclude', '--only=SIGNAL', '--only-unsafe', '--strict', '--summary']) assert.ok(common.includes(flag), flag)
  assert.ok(!common.includes('--server') && !common.includes('--report'), common)
  for (const doc of ['docs/cli.md', 'docs/policy.md#text-in-images', 'docs/policy.md#codes-in-images', 'docs/policy.md#hash-lists']) assert.ok(r.stdout.includes(doc), doc)
})

/** A command whose output is its result says that a stdout it could not write (a full disk) is exit 2. */
const STDOUT_FULL = /stdout (could not|full)/

/** The EXIT CODES section of a command's --help, as [code, meaning] rows. */
async function exitCodes(command: string[]): Promise<string[][]> {
  const r = await runInProcess([...command, '--help'])
  const section = r.stdout.split('EXIT CODES\n')[1] ?? ''
  // A row's text may wrap onto indented lines of its own.
  return section
    .split(/\n(?=\s+\d+\s)/)
    .filter((l) => /^\s+\d+\s/.test(l))
    .map((l) => {
      const [code, ...text] = l.trim().split(/\s+/)
      return [code, text.join(' ')]
    })
}

test('each command states its own exit codes: only the scanning commands have 1, every one the signal codes', async () => {
  const signals = [['129', 'stopped by SIGHUP (the terminal closed)'], ['130', 'stopped by Ctrl-C (SIGINT)'], ['141', 'the reader of stdout went away (| head): the output was cut short'], ['143', 'stopped by SIGTERM (a CI runner, docker stop, timeout)']]
  const own: [string[], string][] = [
    [['categories'], 'the categories are listed'],
    [['models', 'list'], 'the presets are listed'],
    [['models', 'pull'], 'installed (files already in place are kept)'],
    [['models', 'remove'], 'removed, or not installed'],
    [['eval'], 'done'],
    [['calibrate'], 'done'],
    [['head', 'train'], 'done'],
    [['policy', 'show'], 'the policy in force is printed'],
  ]
  for (const [command, success] of own) {
    const rows = await exitCodes(command)
    assert.equal(rows[0], ['0', success], command.join(' '))
    assert.equal(rows.map((r) => r[0]), ['0', '2', '129', '130', '141', '143'], command.join(' '))
    assert.equal(rows.slice(2), signals, command.join(' '))
    if (['categories', 'models list'].includes(command.join(' '))) assert.match(rows[1][1], STDOUT_FULL, command.join(' '))
  }
  for (const command of [['hash'], ['scan']]) {
    assert.match((await exitCodes(command)).find((r) => r[0] === '2')?.[1] ?? '', STDOUT_FULL, command.join(' '))
  }
  // In a process of its own: oclif run in this one keeps a topic's command from running again after its --help.
  assert.match((await runCli(['policy', 'validate', '--help'])).stdout.replace(/\s+/g, ' '), / 2 the file is not valid, or cannot be read; stdout could not be written/)
  const video = await exitCodes(['scan-video'])
  assert.match(video[2][1], STDOUT_FULL)
  assert.equal(video.slice(0, 2), [['0', 'the video was scanned and is safe'], ['1', 'a violation was found']])
  assert.equal(video.map((r) => r[0]), ['0', '1', '2', '129', '130', '141', '143'])
})

test('version prints the name and version; autocomplete is a command', async () => {
  const r = await runInProcess(['version'])
  assert.is(r.code, 0)
  assert.match(r.stdout, /^@mod-moderation\/cli\/0\.2\.0 /)
  const help = await runInProcess(['help'])
  assert.match(help.stdout, /autocomplete\s+Display autocomplete installation instructions/)
})

test('without a build (no dist/) the launcher exits 2 with one line', () => {
  const bin = join(dir.path, 'pkg', 'bin')
  mkdirSync(bin, {recursive: true})
  copyFileSync(BIN, join(bin, 'run.js'))
  const r = spawnSync(process.execPath, [join(bin, 'run.js'), 'scan', 'x'], {encoding: 'utf8'})
  assert.is(r.status, 2)
  assert.is(r.stderr, 'mod: internal: the build is missing (no dist/ folder): run `npm run build` in the package folder\n')
})

test('in a working folder removed under the shell, a command is one usage line and exit 2, not an internal error; --version still runs', () => {
  const image = join(ROOT, 'test', 'fixtures', 'photos', 'coffee.jpg')
  const gone = join(dir.path, 'gone')
  const inGone = (...args: string[]) => {
    mkdirSync(gone)
    return spawnSync('sh', ['-c', 'cd "$1" && rmdir "$1" && shift && exec "$@"', 'sh', gone, process.execPath, BIN, ...args], {encoding: 'utf8'})
  }
  for (const args of [['scan', image], ['hash', image], ['categories']]) {
    const r = inGone(...args)
    assert.is(r.status, 2, args[0])
    assert.is(r.stdout, '', args[0])
    assert.is(r.stderr, 'mod: usage: the working folder no longer exists (removed or moved): cd to an existing folder and run the command again\n', args[0])
  }
  const version = inGone('--version')
  assert.is(version.status, 0)
  assert.match(version.stdout, /^@mod-moderation\/cli\/0\.2\.0 /)
})

test('policy validate --json and categories --json go through oclif\'s json flag: one value on stdout', async () => {
  const r = await runInProcess(['policy', 'validate', join(dir.path, 'none.yaml'), '--json'])
  assert.is(r.code, 2)
  assert.is((JSON.parse(r.stdout) as {valid: boolean}).valid, false)
  assert.match(r.stderr, /^mod: invalid_config: cannot read the policy file/)
})

test('a flag only a scan on a server reads, given without --server, is a usage error naming it, not a flag that does nothing', async () => {
  const cases: [string[], string][] = [
    [['scan', 'x.png', '--timeout', '5'], '--timeout applies to a scan on a server only: add --server URL (or set MOD_SERVER), or leave it out to scan here (mod scan --help)'],
    [['scan', 'x.png', '--resume=j.ndjson', '--concurrency', '2'], '--concurrency, --resume apply to a scan on a server only: add --server URL (or set MOD_SERVER), or leave them out to scan here (mod scan --help)'],
    [['scan-video', 'x.mp4', '--retries', '0', '--api-key', 'k'], '--api-key, --retries apply to a scan on a server only: add --server URL (or set MOD_SERVER), or leave them out to scan here (mod scan-video --help)'],
  ]
  for (const [args, message] of cases) {
    const r = await runInProcess(args)
    assert.is(r.code, 2, args.join(' '))
    assert.is(r.stderr, `mod: usage: ${message}\n`)
  }
})

test.run()

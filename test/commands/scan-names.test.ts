// File names that are not UTF-8 (a Latin-1 `café.png`, written from another system): scanned like any other file,
// in a folder and from a file list, and reported under a name whose stray bytes are escaped as \xNN; a folder so
// named is walked like any other.
import {execFile} from 'node:child_process'
import {mkdirSync, readFileSync, symlinkSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {BIN, runInProcess, solidPng, tempDir, TOY_MODEL, writeRednessPolicy} from '../helpers/cli.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const dir = tempDir('mod-names-')
const env = {MOD_MODEL_DIR: TOY_MODEL, MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache'))}
const latin1 = Buffer.from('caf\xe9.png', 'latin1')
const scan = (args: string[]) => runInProcess(['scan', ...args, '--config', 'policy.yaml'], {cwd: dir.path, env})

test.before(async () => {
  mkdirSync(join(dir.path, 'photos'))
  writeRednessPolicy(dir.path)
  writeFileSync(Buffer.concat([Buffer.from(join(dir.path, 'photos', '/')), latin1]), await solidPng(255, 0, 0, 16, 16))
  writeFileSync(join(dir.path, 'photos', 'blue.png'), await solidPng(0, 0, 255, 16, 16))
  // A list as `git diff --name-only -z` writes it: the name's own bytes.
  writeFileSync(join(dir.path, 'list'), Buffer.concat([Buffer.from('photos/'), latin1, Buffer.from('\0photos/blue.png\0')]))
})

test.after(() => dir.remove())

test('a folder whose name is not UTF-8 is walked: its images, the folders inside it and its .modignore, under the escaped name', async () => {
  // tree/café/ (Latin-1), holding red.png, inner/blue.png, skip.png that its .modignore leaves out, and a link back up.
  const cafe = Buffer.concat([Buffer.from(join(dir.path, 'tree', '/')), Buffer.from('caf\xe9', 'latin1')])
  const at = (name: string) => Buffer.concat([cafe, Buffer.from(`/${name}`)])
  mkdirSync(at('inner'), {recursive: true})
  writeFileSync(at('red.png'), await solidPng(255, 0, 0, 16, 16))
  writeFileSync(at('inner/blue.png'), await solidPng(0, 0, 255, 16, 16))
  writeFileSync(at('skip.png'), await solidPng(255, 0, 0, 16, 16))
  writeFileSync(at('.modignore'), 'skip.png\n')
  symlinkSync('..', at('up'))
  const r = await scan(['tree', '--json'])
  assert.is(r.code, 1, r.stderr)
  const results = JSON.parse(r.stdout) as {source: string; is_safe?: boolean}[]
  assert.equal(results.map((x) => [x.source, x.is_safe]), [['tree/caf\\xe9/inner/blue.png', true], ['tree/caf\\xe9/red.png', false]])
  assert.match(r.stderr, 'skipped 2 (1 excluded, 1 symlink loop)')
})

test('a name that is not UTF-8 is scanned in a folder and from a -0 list, and shown with \\xNN for its stray bytes', async () => {
  for (const args of [['photos', '--json'], ['--files-from', 'list', '-0', '--json']]) {
    const r = await scan(args)
    assert.is(r.code, 1, r.stderr)
    const results = JSON.parse(r.stdout) as {source: string; is_safe?: boolean; error?: unknown}[]
    // A folder in name order, a list in its own.
    const expected = [['photos/blue.png', true], ['photos/caf\\xe9.png', false]]
    assert.equal(results.map((x) => [x.source, x.is_safe]), args[0] === 'photos' ? expected : expected.reverse(), args.join(' '))
  }
  const table = await scan(['photos'])
  assert.match(table.stdout, /^UNSAFE {2}photos\/caf\\xe9\.png {2}redness 1\.00>=0\.5/m)
})

test('the --report page shows the thumbnail of an image whose name is not UTF-8, read by its bytes rather than by its escaped name', async () => {
  const page = join(dir.path, 'names.html')
  const r = await scan(['photos', '--report', page, '--report-sample', '1'])
  assert.is(r.code, 1, r.stderr)
  const items = JSON.parse(/<script id="report-items" type="application\/json">([^]*?)<\/script>/.exec(readFileSync(page, 'utf8'))?.[1] ?? '') as {path: string; thumb?: string; sample?: boolean}[]
  assert.equal(items.map((x) => [x.path, x.sample ?? false, x.thumb?.startsWith('data:image/jpeg;base64,')]), [
    ['photos/caf\\xe9.png', false, true],
    ['photos/blue.png', true, true],
  ])
})

test('a name holding C1 controls or bidirectional ones is written in JSON, NDJSON and SARIF with those escaped: the same name parsed, nothing a terminal acts on', async () => {
  // U+009B is an 8-bit CSI (clear the screen), U+202E shows the rest of the name backwards, U+0085 a line break.
  const name = 'x\u009b2J\u202egnp.exe\u0085.png'
  mkdirSync(join(dir.path, 'controls'))
  writeFileSync(join(dir.path, 'controls', name), await solidPng(255, 0, 0, 16, 16))
  for (const format of ['--json', '--ndjson', '--format=sarif']) {
    const r = await scan(['controls', ...format.split('=')])
    assert.is(r.code, 1, r.stderr)
    assert.not.match(r.stdout, /[\u0080-\u009f\u202a-\u202e]/, format)
    assert.match(r.stdout, 'x\\u009b2J\\u202egnp.exe\\u0085.png', format)
    const parsed = format === '--ndjson' ? JSON.parse(r.stdout.split('\n')[0]) : JSON.parse(r.stdout)
    const source = format === '--format=sarif' ? decodeURIComponent(parsed.runs[0].results[0].locations[0].physicalLocation.artifactLocation.uri) : (format === '--json' ? parsed[0] : parsed).source
    assert.is(source, `controls/${name}`, format)
  }
})

test('named on the command line (its bytes read back from the system), the file is scanned too', async () => {
  // A shell passes the name's bytes as they are; Node.js alone would decode them into a name that does not exist.
  const script = `exec "$0" "$1" scan "$(printf 'photos/caf\\351.png')" --json --config policy.yaml`
  const r = await new Promise<{code: number; stdout: string; stderr: string}>((resolve) => {
    execFile('sh', ['-c', script, process.execPath, BIN], {cwd: dir.path, env: {PATH: process.env.PATH ?? '', ...env}}, (e, stdout, stderr) =>
      resolve({code: (e as {code?: number} | null)?.code ?? 0, stdout, stderr}),
    )
  })
  assert.is(r.code, 1, r.stderr)
  assert.equal(JSON.parse(r.stdout).map((x: {source: string; is_safe: boolean}) => [x.source, x.is_safe]), [['photos/caf\\xe9.png', false]])
})

test.run()

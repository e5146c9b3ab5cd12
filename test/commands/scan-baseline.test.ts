import {spawnSync} from 'node:child_process'
import {chmodSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {BIN, runCli, runInProcess, shellWord, solidPng, tempDir, TOY_MODEL, writeRednessPolicy} from '../helpers/cli.js'
import {git as gitIn} from '../helpers/git.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const dir = tempDir()
const env = {MOD_MODEL_DIR: TOY_MODEL, MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache'))}
const work = join(dir.path, 'work')
const repo = join(dir.path, 'repo')
const git = (...args: string[]): string => gitIn(repo, ...args)

test.before(async () => {
  mkdirSync(join(work, 'assets'), {recursive: true})
  writeRednessPolicy(work)
  writeFileSync(join(work, 'assets', 'red.png'), await solidPng(255, 0, 0))
  writeFileSync(join(work, 'assets', 'blue.png'), await solidPng(0, 0, 255))
})

test.after(() => dir.remove())

const scan = (...args: string[]) => runInProcess(['scan', ...args, '--config', 'policy.yaml'], {env, cwd: work})

test('--write-baseline writes the flagged images with their sha256 and categories; --baseline then accepts them', async () => {
  const w = await scan('assets', '--write-baseline', 'mod-baseline.json')
  assert.is(w.code, 1, 'writing a baseline does not change the verdict')
  assert.is(w.stderr, 'mod: baseline: wrote 1 flagged image to mod-baseline.json\n2 scanned: 1 safe, 1 unsafe, 0 errors\n')
  const red = readFileSync(join(work, 'assets', 'red.png'))
  const sha = (await import('node:crypto')).createHash('sha256').update(red).digest('hex')
  assert.equal(JSON.parse(readFileSync(join(work, 'mod-baseline.json'), 'utf8')), {
    version: 1,
    items: [{sha256: sha, source: 'assets/red.png', categories: ['redness']}],
  })
  const r = await scan('assets', '--baseline', 'mod-baseline.json')
  assert.is(r.code, 0, r.stderr)
  assert.is(r.stdout, 'SAFE    assets/blue.png  (highest: alcohol 0.05)\nUNSAFE  assets/red.png  redness 1.00>=0.5  (accepted by the baseline)\n')
  assert.is(r.stderr, '2 scanned: 1 safe, 1 unsafe (1 accepted by the baseline), 0 errors\n')
  const summary = await scan('assets', '--baseline', 'mod-baseline.json', '--summary', '--json')
  assert.is(summary.code, 0)
  assert.equal(JSON.parse(summary.stdout), {safe: 1, unsafe: 1, errors: 0, missing: 0, accepted: 1, scanned: 2, skipped: {}, not_evaluated: []})
  // Saved again by an editor that starts UTF-8 with a byte order mark (Notepad, PowerShell's UTF8): read the same.
  writeFileSync(join(work, 'bom-baseline.json'), `\uFEFF${readFileSync(join(work, 'mod-baseline.json'), 'utf8')}`)
  const bom = await scan('assets', '--baseline', 'bom-baseline.json')
  assert.is(bom.code, 0, bom.stderr)
  assert.match(bom.stdout, '(accepted by the baseline)')
})

test('a renamed file stays accepted; a changed file, or a violation of a category the baseline does not list, is not', async () => {
  renameSync(join(work, 'assets', 'red.png'), join(work, 'assets', 'moved.png'))
  const moved = await scan('assets', '--baseline', 'mod-baseline.json', '--json')
  assert.is(moved.code, 0, moved.stderr)
  assert.equal(
    JSON.parse(moved.stdout).map((x: {source: string; accepted_by_baseline?: boolean}) => [x.source, x.accepted_by_baseline]),
    [['assets/blue.png', undefined], ['assets/moved.png', true]],
  )
  writeFileSync(join(work, 'assets', 'moved.png'), await solidPng(254, 0, 0))
  const changed = await scan('assets', '--baseline', 'mod-baseline.json')
  assert.is(changed.code, 1)
  assert.is(changed.stderr, '2 scanned: 1 safe, 1 unsafe, 0 errors\n')
  writeFileSync(join(work, 'assets', 'moved.png'), await solidPng(255, 0, 0))
  writeFileSync(join(work, 'more.yaml'), 'categories:\n  redness:\n    prompts: ["red"]\n  crimson:\n    prompts: ["red"]\n')
  const more = await runInProcess(['scan', 'assets', '--config', 'more.yaml', '--baseline', 'mod-baseline.json'], {env, cwd: work})
  assert.is(more.code, 1)
  assert.match(more.stdout, /UNSAFE {2}assets\/moved\.png {2}(crimson|redness) 1\.00>=0\.5, (crimson|redness) 1\.00>=0\.5\n/)
})

test('an accepted item is a suppressed SARIF result, a skipped JUnit case, marked in the HTML report, and no GitHub annotation', async () => {
  const sarif = JSON.parse((await scan('assets', '--baseline', 'mod-baseline.json', '--format', 'sarif')).stdout)
  assert.equal(sarif.runs[0].results[0].suppressions, [{kind: 'external', status: 'accepted', justification: 'accepted by the baseline'}])
  const junit = await scan('assets', '--baseline', 'mod-baseline.json', '--format', 'junit')
  assert.is(junit.code, 0)
  assert.match(junit.stdout, /<testcase classname="mod scan" name="assets\/moved.png">\n {6}<skipped message="accepted by the baseline: redness 1.00 &gt;= 0.5"\/>/)
  await scan('assets', '--baseline', 'mod-baseline.json', '--report', 'report.html')
  const page = readFileSync(join(work, 'report.html'), 'utf8')
  assert.match(page, /\{"result":\{"source":"assets\/moved\.png",[^\n]*"accepted":true\}/)
  const github = await scan('assets', '--baseline', 'mod-baseline.json', '--format', 'github')
  assert.is(github.stdout, '::notice title=mod scan::2 scanned: 1 safe, 1 unsafe (1 accepted by the baseline), 0 errors\n')
})

test('a baseline that is missing, not JSON or of another version is a configuration error, before any scan', async () => {
  const missing = await scan('assets', '--baseline', 'nope.json')
  assert.is(missing.code, 2)
  assert.is(missing.stderr, 'mod: invalid_config: the baseline nope.json does not exist (--write-baseline nope.json writes one)\n')
  writeFileSync(join(work, 'v2.json'), '{"version": 2, "items": []}')
  const v2 = await scan('assets', '--baseline', 'v2.json')
  assert.is(v2.stderr, 'mod: invalid_config: the baseline v2.json is not valid: version 2 is not 1, the one this mod reads\n')
  writeFileSync(join(work, 'bad.json'), '{"version": 1, "items": [{"sha256": "abc", "categories": []}]}')
  const bad = await scan('assets', '--baseline', 'bad.json')
  assert.is(bad.stderr, 'mod: invalid_config: the baseline bad.json is not valid: items[0].sha256 must be 64 lowercase hex digits\n')
  assert.is(bad.stdout, '')
})

test('--write-baseline naming a file that is not a baseline (an image a shell pattern put after the flag): exit 2 before scanning, the file kept', async () => {
  const red = await solidPng(255, 0, 0)
  writeFileSync(join(work, 'target.png'), red)
  const r = await scan('assets', '--write-baseline', 'target.png')
  assert.is(r.code, 2, r.stderr)
  assert.is(r.stdout, '')
  assert.is(
    r.stderr,
    'mod: bad_request: --write-baseline target.png: the file there is not a baseline (a JSON object), and a baseline replaces only a baseline (a shell pattern after --write-baseline names its first match): give a new file name\n',
  )
  assert.equal(readFileSync(join(work, 'target.png')), red)
  // An earlier baseline, or an empty file, is replaced as ever.
  for (const text of ['{"version":1,"items":[]}\n', '']) {
    writeFileSync(join(work, 'old-baseline.json'), text)
    const again = await scan('assets', '--write-baseline', 'old-baseline.json')
    assert.is(again.code, 1, again.stderr)
    assert.is(JSON.parse(readFileSync(join(work, 'old-baseline.json'), 'utf8')).items.length, 1)
  }
})

test('--write-baseline through a link in a folder this user cannot write (as /dev/stdout is, with stdout a file) writes the file it names', async () => {
  const locked = join(dir.path, 'locked')
  const real = join(dir.path, 'real')
  mkdirSync(locked)
  mkdirSync(real)
  symlinkSync('/dev/stdout', join(locked, 'stdout'))
  chmodSync(locked, 0o555)
  // Root writes any folder: as root the scan runs without the capability that allows it (util-linux setpriv).
  const noOverride = process.getuid?.() === 0 ? ['setpriv', '--inh-caps=-dac_override', '--bounding-set=-dac_override', '--'] : []
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MOD_')))
  const line = [...noOverride, ...[process.execPath, BIN, 'scan', 'assets'].map(shellWord), '--config', 'policy.yaml', '--write-baseline', shellWord(join(locked, 'stdout'))].join(' ')
  const r = spawnSync('sh', ['-c', `${line} > ${shellWord(join(real, 'baseline.json'))}`], {cwd: work, encoding: 'utf8', env: {...base, NO_COLOR: '1', ...env}})
  chmodSync(locked, 0o755)
  assert.is(r.status, 1, r.stderr)
  assert.equal(readdirSync(locked), ['stdout'])
  const written = readFileSync(join(real, 'baseline.json'), 'utf8')
  assert.equal(JSON.parse(written.slice(written.indexOf('{'), written.lastIndexOf('}') + 1)).items.length, 1)
})

test('in a git repository, `git diff --name-only -z --diff-filter=d` piped to --files-from - -0 scans only the changed images', async () => {
  mkdirSync(join(repo, 'img'), {recursive: true})
  git('init', '-q', '-b', 'main')
  writeRednessPolicy(repo)
  writeFileSync(join(repo, 'img', 'old red.png'), await solidPng(255, 0, 0))
  writeFileSync(join(repo, 'img', 'kept.png'), await solidPng(0, 0, 255))
  writeFileSync(join(repo, 'img', 'gone.png'), await solidPng(0, 0, 200))
  writeFileSync(join(repo, 'README.md'), 'hello\n')
  git('add', '-A')
  git('commit', '-qm', 'base')
  git('checkout', '-qb', 'change')
  writeFileSync(join(repo, 'img', 'new\nline.png'), await solidPng(250, 0, 0))
  writeFileSync(join(repo, 'img', 'kept.png'), await solidPng(0, 0, 250))
  rmSync(join(repo, 'img', 'gone.png'))
  writeFileSync(join(repo, 'README.md'), 'hello again\n')
  git('add', '-A')
  git('commit', '-qm', 'change')
  const diff = Buffer.from(git('diff', '--name-only', '-z', '--diff-filter=d', 'main'))
  const r = await runCli(['scan', '--files-from', '-', '-0', '--config', 'policy.yaml', '--json'], {env, cwd: repo, stdin: diff})
  assert.is(r.code, 1, r.stderr)
  assert.equal(
    JSON.parse(r.stdout).map((x: {source: string; is_safe: boolean}) => [x.source, x.is_safe]),
    [['img/kept.png', true], ['img/new\nline.png', false]],
  )
  assert.is(r.stderr, '2 scanned: 1 safe, 1 unsafe, 0 errors; skipped 1 (1 not an image)\n')
  // Without the filter a deleted file is listed: it is a not_found error entry, never passed over.
  const all = Buffer.from(git('diff', '--name-only', '-z', 'main'))
  const withDeleted = await runCli(['scan', '--files-from', '-', '--null', '--config', 'policy.yaml', '--ndjson'], {env, cwd: repo, stdin: all})
  assert.is(withDeleted.code, 1)
  assert.equal(JSON.parse(withDeleted.stdout.split('\n')[0]), {source: 'img/gone.png', error: {code: 'not_found', message: 'img/gone.png does not exist'}})
})

test('--files-from FILE reads one path per line; an empty list scans nothing and exits 0', async () => {
  writeFileSync(join(repo, 'list.txt'), 'img/kept.png\r\n\nimg/missing.png\n')
  const r = await runInProcess(['scan', '--files-from', 'list.txt', '--config', 'policy.yaml'], {env, cwd: repo})
  assert.is(r.code, 2)
  assert.is(r.stdout, 'SAFE    img/kept.png  (highest: alcohol 0.05)\nERROR   img/missing.png  not_found: img/missing.png does not exist\n')
  // Saved by a Windows tool, with a byte order mark before the first path.
  writeFileSync(join(repo, 'bom.txt'), '\uFEFFimg/kept.png\r\n')
  const bom = await runInProcess(['scan', '--files-from', 'bom.txt', '--config', 'policy.yaml'], {env, cwd: repo})
  assert.equal([bom.code, bom.stdout], [0, 'SAFE    img/kept.png  (highest: alcohol 0.05)\n'], bom.stderr)
  writeFileSync(join(repo, 'empty.txt'), '')
  const empty = await runInProcess(['scan', '--files-from', 'empty.txt', '--config', 'policy.yaml'], {env, cwd: repo})
  assert.is(empty.code, 0, empty.stderr)
  assert.is(empty.stderr, '0 scanned: 0 safe, 0 unsafe, 0 errors\n')
  // Piped stdin is not taken for a missing path: only `-` reads it.
  const piped = await runCli(['scan', '--files-from', 'empty.txt', '--config', 'policy.yaml'], {env, cwd: repo, stdin: Buffer.from('img/kept.png\n')})
  assert.is(piped.code, 0, piped.stderr)
  assert.is(piped.stdout, '')
})

test('scan without paths or --files-from is a usage error, and so is -0 without --files-from', async () => {
  const none = await runInProcess(['scan'], {env, cwd: repo})
  assert.is(none.code, 2)
  assert.match(none.stderr, /^mod: usage: mod scan needs <paths...>: files, folders or - \(stdin\); none with --files-from/)
  const nul = await runInProcess(['scan', 'img', '-0'], {env, cwd: repo})
  assert.is(nul.code, 2)
  assert.match(nul.stderr, /^mod: usage: .*--files-from/)
})

test.run()

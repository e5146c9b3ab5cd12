// The shell habits of `mod scan`: choosing what is printed, leaving paths out, changing the policy for one run,
// counting missing paths apart, and saying which policy file a search found.
import {appendFileSync, existsSync, mkdirSync, symlinkSync, writeFileSync} from 'node:fs'
import {dirname, join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'
import {parse} from 'yaml'

import {runInProcess, solidPng, tempDir, TOY_MODEL, writeRednessPolicy} from '../helpers/cli.js'
import {git} from '../helpers/git.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const dir = tempDir()
const env = {MOD_MODEL_DIR: TOY_MODEL, MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache'))}
let policy = ''
let folder = ''

test.before(async () => {
  policy = writeRednessPolicy(dir.path)
  folder = join(dir.path, 'photos')
  mkdirSync(join(folder, 'drafts'), {recursive: true})
  mkdirSync(join(folder, 'keep'))
  writeFileSync(join(folder, 'a-red.png'), await solidPng(255, 0, 0))
  writeFileSync(join(folder, 'b-blue.png'), await solidPng(0, 0, 255))
  writeFileSync(join(folder, 'c-blue.tmp'), await solidPng(0, 0, 255))
  writeFileSync(join(folder, 'drafts', 'd-red.png'), await solidPng(255, 0, 0))
  writeFileSync(join(folder, 'keep', 'e-red.png'), await solidPng(255, 0, 0))
  writeFileSync(join(folder, 'keep', 'f-blue.png'), await solidPng(0, 0, 255))
  // Git-ignore syntax, scoped to the folder that holds the file.
  writeFileSync(join(folder, '.modignore'), '# drafts are not uploads\ndrafts/\n')
  writeFileSync(join(folder, 'keep', '.modignore'), 'f-*.png\n')
})

test.after(() => dir.remove())

const sources = (stdout: string): string[] => stdout.trim().split('\n').filter(Boolean).map((l) => (JSON.parse(l) as {source: string}).source)

test('--exclude and .modignore files leave paths out, counted as excluded in the summary', async () => {
  const r = await runInProcess(['scan', folder, '--config', policy, '--exclude', '*.tmp'], {env})
  assert.is(r.code, 1, r.stderr)
  assert.equal(
    r.stdout.trim().split('\n').map((l) => l.split(/\s+/)[1]),
    [join(folder, 'a-red.png'), join(folder, 'b-blue.png'), join(folder, 'keep', 'e-red.png')],
  )
  assert.is(r.stderr, '3 scanned: 1 safe, 2 unsafe, 0 errors; skipped 3 (3 excluded)\n')
  const file = await runInProcess(['scan', join(folder, 'c-blue.tmp'), join(folder, 'a-red.png'), '--config', policy, '--exclude', '*.tmp', '--ndjson'], {env})
  assert.equal(sources(file.stdout), [join(folder, 'a-red.png')])
})

test('a !pattern in a deeper .modignore re-includes what a parent folder\'s file left out, as in git; --exclude still wins', async () => {
  const tree = join(dir.path, 'tree')
  mkdirSync(join(tree, 'sub'), {recursive: true})
  writeFileSync(join(tree, 'a.tmp'), await solidPng(255, 0, 0))
  writeFileSync(join(tree, 'sub', 'b.tmp'), await solidPng(255, 0, 0))
  writeFileSync(join(tree, '.modignore'), '*.tmp\n')
  writeFileSync(join(tree, 'sub', '.modignore'), '!*.tmp\n')
  const r = await runInProcess(['scan', tree, '--config', policy, '--ndjson'], {env})
  assert.equal(sources(r.stdout), [join(tree, 'sub', 'b.tmp')])
  assert.is(r.stderr, '1 scanned: 0 safe, 1 unsafe, 0 errors; skipped 1 (1 excluded)\n')
  const flag = await runInProcess(['scan', tree, '--config', policy, '--ndjson', '--exclude', 'b.tmp'], {env})
  assert.equal(sources(flag.stdout), [])
})

test('a folder scan skips .git and what .gitignore, .ignore and .git/info/exclude leave out, as ripgrep does; --no-ignore walks them', async () => {
  const repo = join(dir.path, 'repo')
  const red = await solidPng(255, 0, 0, 16, 16)
  const files: Record<string, string> = {
    '.gitignore': 'node_modules/\n*.tmp.png\n',
    'sub/.gitignore': 'local-*.png\n!keep.tmp.png\n',
    'other/.ignore': 'f.png\n',
  }
  const images = ['.git/stray.png', 'a.png', 'b.tmp.png', 'h.png', 'node_modules/pkg/c.png', 'other/f.png', 'other/g.png', 'sub/d.png', 'sub/keep.tmp.png', 'sub/local-e.png', 'sub/y.tmp.png']
  mkdirSync(repo)
  git(repo, 'init', '-q')
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(repo, name)), {recursive: true})
    writeFileSync(join(repo, name), text)
  }
  for (const name of images) {
    mkdirSync(dirname(join(repo, name)), {recursive: true})
    writeFileSync(join(repo, name), red)
  }
  appendFileSync(join(repo, '.git', 'info', 'exclude'), 'h.png\n')
  const scanned = async (...args: string[]) => {
    const r = await runInProcess(['scan', ...args, '--config', policy, '--ndjson'], {env, cwd: repo})
    assert.is(r.code, 1, r.stderr)
    return sources(r.stdout)
  }
  // The deeper .gitignore re-includes keep.tmp.png; .ignore applies where it is.
  assert.equal(await scanned('.'), ['a.png', 'other/g.png', 'sub/d.png', 'sub/keep.tmp.png'])
  // A folder given inside the repository keeps the rules of the folders above it.
  assert.equal(await scanned('sub'), ['sub/d.png', 'sub/keep.tmp.png'])
  // A folder named on the command line is walked, even one the rules above it leave out.
  assert.equal(await scanned('node_modules'), ['node_modules/pkg/c.png'])
  assert.equal(await scanned('.', '--no-ignore'), images)
  // A .gitignore outside a git repository is not git's: only .ignore applies there.
  const plain = join(dir.path, 'plain')
  mkdirSync(plain)
  writeFileSync(join(plain, '.gitignore'), 'x.png\n')
  writeFileSync(join(plain, '.ignore'), 'y.png\n')
  writeFileSync(join(plain, 'x.png'), red)
  writeFileSync(join(plain, 'y.png'), red)
  assert.equal(await scanned(plain), [join(plain, 'x.png')])
})

test('ignore patterns match names case-sensitively, as git and ripgrep do: *.PNG in a .gitignore, a .modignore or --exclude leaves out a.PNG, not b.png', async () => {
  const repo = join(dir.path, 'cases')
  const red = await solidPng(255, 0, 0)
  mkdirSync(join(repo, 'mod'), {recursive: true})
  git(repo, 'init', '-q')
  for (const name of ['a.PNG', 'b.png', 'mod/c.JPG', 'mod/d.jpg', 'e.GIF', 'f.gif']) writeFileSync(join(repo, name), red)
  writeFileSync(join(repo, '.gitignore'), '*.PNG\n')
  writeFileSync(join(repo, 'mod', '.modignore'), '*.JPG\n')
  const r = await runInProcess(['scan', '.', '--config', policy, '--ndjson', '--exclude', '*.GIF'], {env, cwd: repo})
  assert.equal(sources(r.stdout), ['b.png', 'f.gif', 'mod/d.jpg'], r.stderr)
  assert.is(r.stderr, '3 scanned: 0 safe, 3 unsafe, 0 errors; skipped 5 (4 excluded, 1 not an image)\n')
})

test('a nested repository is not ruled by the .gitignore around it, as in git and ripgrep; an .ignore above still applies', async () => {
  const outer = join(dir.path, 'outer')
  const red = await solidPng(255, 0, 0)
  mkdirSync(join(outer, 'inner'), {recursive: true})
  git(outer, 'init', '-q')
  git(join(outer, 'inner'), 'init', '-q')
  writeFileSync(join(outer, '.gitignore'), '*.tmp.png\n')
  appendFileSync(join(outer, '.git', 'info', 'exclude'), 'ex.png\n')
  writeFileSync(join(outer, '.ignore'), '*.skip.png\n')
  for (const name of ['a.tmp.png', 'inner/b.tmp.png', 'inner/c.skip.png', 'inner/ex.png']) writeFileSync(join(outer, name), red)
  const r = await runInProcess(['scan', '.', '--config', policy, '--ndjson'], {env, cwd: outer})
  assert.equal(sources(r.stdout), ['inner/b.tmp.png', 'inner/ex.png'], r.stderr)
})

test('a folder named .ignore, .gitignore or .modignore is walked as any folder, not taken for an ignore file (the scan stopped on it, or passed it over)', async () => {
  const tree = join(dir.path, 'named-folders')
  const red = await solidPng(255, 0, 0)
  mkdirSync(join(tree, '.ignore'), {recursive: true})
  mkdirSync(join(tree, '.gitignore'))
  mkdirSync(join(tree, '.modignore'))
  git(tree, 'init', '-q')
  for (const name of ['.ignore/a.png', '.gitignore/b.png', '.modignore/d.png', 'c.png']) writeFileSync(join(tree, name), red)
  const r = await runInProcess(['scan', '.', '--config', policy, '--ndjson'], {env, cwd: tree})
  assert.is(r.code, 1, r.stderr)
  assert.equal(sources(r.stdout), ['.gitignore/b.png', '.ignore/a.png', '.modignore/d.png', 'c.png'])
})

test('a .gitignore or .ignore that is a symlink to nothing is passed over, as git and ripgrep do, counted among the broken symlinks; a .modignore so is an error naming its target', async () => {
  const tree = join(dir.path, 'dangling-ignores')
  mkdirSync(join(tree, 'sub'), {recursive: true})
  git(tree, 'init', '-q')
  for (const name of ['a.png', 'sub/b.png', 'sub/c.png']) writeFileSync(join(tree, name), await solidPng(255, 0, 0))
  symlinkSync('moved-away', join(tree, '.gitignore'))
  symlinkSync(join('..', 'gone'), join(tree, 'sub', '.ignore'))
  writeFileSync(join(tree, 'sub', '.gitignore'), 'c.png\n')
  const r = await runInProcess(['scan', '.', '--config', policy, '--ndjson'], {env, cwd: tree})
  assert.is(r.code, 1, r.stderr)
  assert.equal(sources(r.stdout), ['a.png', 'sub/b.png'])
  assert.match(r.stderr, /skipped \d+ \(2 broken symlinks, /)
  symlinkSync('shared-rules', join(tree, 'sub', '.modignore'))
  const own = await runInProcess(['scan', '.', '--config', policy, '--ndjson'], {env, cwd: tree})
  assert.is(own.code, 2, own.stderr)
  assert.is(own.stdout, '')
  assert.match(own.stderr, /^mod: invalid_config: sub\/\.modignore is a symbolic link to shared-rules, which does not exist$/m)
})

test('files git tracks are scanned whatever .gitignore, .ignore and .git/info/exclude say, as git keeps them (a change cannot hide a committed image so); .modignore and --exclude still leave them out', async () => {
  const repo = join(dir.path, 'tracked-repo')
  const red = await solidPng(255, 0, 0, 16, 16)
  mkdirSync(join(repo, 'assets', 'sub'), {recursive: true})
  mkdirSync(join(repo, 'vendor'), {recursive: true})
  git(repo, 'init', '-q')
  writeFileSync(join(repo, 'assets', 'sub', '.gitignore'), 'banner.png\nuntracked.png\n')
  writeFileSync(join(repo, 'assets', '.ignore'), 'logo.png\n')
  writeFileSync(join(repo, '.gitignore'), 'vendor/\n')
  appendFileSync(join(repo, '.git', 'info', 'exclude'), 'hidden.png\n')
  for (const name of ['assets/sub/banner.png', 'assets/sub/untracked.png', 'assets/logo.png', 'assets/hidden.png', 'assets/skip.png', 'vendor/v.png']) writeFileSync(join(repo, name), red)
  writeFileSync(join(repo, 'assets', '.modignore'), 'skip.png\n')
  git(repo, 'add', '.')
  git(repo, 'add', '-f', 'assets/sub/banner.png', 'assets/logo.png', 'assets/hidden.png', 'assets/skip.png', 'vendor/v.png')
  git(repo, 'commit', '-qm', 'images committed past the ignore files')
  // The repository's own configuration names a program for git to run: mod asks git what it tracks without it.
  const ran = join(dir.path, 'fsmonitor-ran')
  git(repo, 'config', 'core.fsmonitor', `touch ${ran}; true`)
  const scanned = async (...args: string[]) => {
    const r = await runInProcess(['scan', ...args, '--config', policy, '--ndjson'], {env, cwd: repo})
    assert.is(r.code, 1, r.stderr)
    return sources(r.stdout)
  }
  assert.equal(await scanned('.'), ['assets/hidden.png', 'assets/logo.png', 'assets/sub/banner.png', 'vendor/v.png'])
  assert.equal(await scanned('assets/sub'), ['assets/sub/banner.png'])
  assert.equal(await scanned('.', '--exclude', 'vendor'), ['assets/hidden.png', 'assets/logo.png', 'assets/sub/banner.png'])
  assert.not.ok(existsSync(ran), "the repository's core.fsmonitor ran")
  // Where git cannot say what the repository tracks (not on PATH here; in a CI container, a checkout git refuses
  // as another user's), its .gitignore and .ignore files hide nothing, and a line says so: a change adding one
  // would otherwise hide a committed image. .modignore still applies.
  const noGit = join(dir.path, 'no-git-bin')
  mkdirSync(noGit)
  const blind = await runInProcess(['scan', 'assets', 'vendor', '--config', policy, '--ndjson'], {env: {...env, PATH: noGit}, cwd: repo})
  assert.is(blind.code, 1, blind.stderr)
  assert.equal(sources(blind.stdout), ['assets/hidden.png', 'assets/logo.png', 'assets/sub/banner.png', 'assets/sub/untracked.png', 'vendor/v.png'])
  assert.is(blind.stderr.split('git cannot list').length, 2, 'said once for the two folders of one repository')
  assert.match(blind.stderr, `mod: warning: git cannot list the files of the repository ${repo} (git is not on PATH): its .gitignore and .ignore files are not applied there, so that none hides a committed image\n`)
})

test('a file reached twice is scanned once: a folder given twice, a file given inside a folder given', async () => {
  const r = await runInProcess(['scan', join(folder, 'keep'), `${join(folder, 'keep')}/`, join(folder, 'a-red.png'), folder, join(folder, 'keep', 'e-red.png'), '--config', policy, '--ndjson'], {env})
  assert.is(r.code, 1, r.stderr)
  assert.equal(sources(r.stdout), [join(folder, 'keep', 'e-red.png'), join(folder, 'a-red.png'), join(folder, 'b-blue.png'), join(folder, 'c-blue.tmp')])
  // keep/f-blue.png, excluded by keep/.modignore, and drafts/ are counted once.
  assert.is(r.stderr, '4 scanned: 2 safe, 2 unsafe, 0 errors; skipped 2 (2 excluded)\n')
})

test('--only-unsafe prints the UNSAFE and ERROR results only; the summary still counts all', async () => {
  const broken = join(dir.path, 'broken.png')
  writeFileSync(broken, (await solidPng(0, 255, 0)).subarray(0, 40))
  const r = await runInProcess(['scan', folder, broken, '--config', policy, '--only-unsafe', '--ndjson'], {env})
  assert.is(r.code, 1, r.stderr)
  assert.equal(sources(r.stdout), [join(folder, 'a-red.png'), join(folder, 'c-blue.tmp'), join(folder, 'keep', 'e-red.png'), broken].filter((s) => !s.endsWith('.tmp')))
  const table = await runInProcess(['scan', folder, '--config', policy, '--only-unsafe'], {env})
  assert.equal(table.stdout.trim().split('\n').map((l) => l.split(/\s+/)[0]), ['UNSAFE', 'UNSAFE'])
  assert.is(table.stderr, '4 scanned: 2 safe, 2 unsafe, 0 errors; skipped 2 (2 excluded)\n')
  const json = await runInProcess(['scan', join(folder, 'b-blue.png'), '--config', policy, '--only-unsafe', '--json'], {env})
  assert.is(json.code, 0, json.stderr)
  assert.equal(JSON.parse(json.stdout), [])
})

test('--summary prints only the summary, on stdout; with --json one object of counts', async () => {
  const r = await runInProcess(['scan', folder, '--config', policy, '--summary'], {env})
  assert.is(r.code, 1, r.stderr)
  assert.is(r.stdout, '4 scanned: 2 safe, 2 unsafe, 0 errors; skipped 2 (2 excluded)\n')
  assert.is(r.stderr, '')
  const json = await runInProcess(['scan', folder, '--config', policy, '--summary', '--json'], {env})
  assert.equal(JSON.parse(json.stdout), {safe: 2, unsafe: 2, errors: 0, missing: 0, scanned: 4, skipped: {excluded: 2}, not_evaluated: []})
  // --format json is --json, here too; --format table is the line.
  const format = await runInProcess(['scan', folder, '--config', policy, '--summary', '--format', 'json'], {env})
  assert.is(format.stdout, json.stdout)
  assert.is((await runInProcess(['scan', folder, '--config', policy, '--summary', '--format', 'table'], {env})).stdout, r.stdout)
  const sarif = await runInProcess(['scan', folder, '--config', policy, '--summary', '--format', 'sarif'], {env})
  assert.is(sarif.code, 2)
  assert.is(sarif.stdout, '')
  assert.is(sarif.stderr, 'mod: usage: --format sarif and --summary cannot be used together: --summary prints one line, or with --format json one object of counts\n')
})

test('--summary with nothing to scan still prints its counts (all 0) on stdout, beside the error and exit 2', async () => {
  const empty = join(dir.path, 'empty')
  mkdirSync(empty, {recursive: true})
  writeFileSync(join(empty, 'notes.txt'), 'not an image')
  const json = await runInProcess(['scan', empty, '--config', policy, '--summary', '--json'], {env})
  assert.is(json.code, 2)
  assert.equal(JSON.parse(json.stdout), {safe: 0, unsafe: 0, errors: 0, missing: 0, scanned: 0, skipped: {'not images': 1}, not_evaluated: []})
  assert.match(json.stderr, /^mod: not_found: nothing was scanned in .*empty: skipped 1 \(1 not an image\)\n$/)
  const line = await runInProcess(['scan', empty, '--config', policy, '--summary'], {env})
  assert.is(line.code, 2)
  assert.is(line.stdout, '0 scanned: 0 safe, 0 unsafe, 0 errors; skipped 1 (1 not an image)\n')
})

test('a path that does not exist is counted apart from the inputs scanned, and still exits 2', async () => {
  const missing = join(dir.path, 'nope.png')
  const r = await runInProcess(['scan', missing, join(folder, 'b-blue.png'), '--config', policy], {env})
  assert.is(r.code, 2)
  assert.match(r.stdout, `ERROR   ${missing}  not_found: ${missing} does not exist`)
  assert.is(r.stderr, '1 scanned: 1 safe, 0 unsafe, 0 errors; 1 not found\n')
})

test('--threshold CATEGORY=VALUE and --disable CATEGORY change the policy for one run; a wrong name gets a suggestion', async () => {
  const red = join(folder, 'a-red.png')
  const off = await runInProcess(['scan', red, '--config', policy, '--disable', 'redness', '--ndjson'], {env})
  assert.is(off.code, 0, off.stderr)
  const result = JSON.parse(off.stdout) as {is_safe: boolean; labels: {name: string}[]}
  assert.is(result.is_safe, true)
  assert.not.ok(result.labels.some((l) => l.name === 'redness'))
  const lowered = await runInProcess(['scan', join(folder, 'b-blue.png'), '--config', policy, '--threshold', 'redness=0', '--ndjson'], {env})
  assert.is(lowered.code, 1, lowered.stderr)
  assert.equal(JSON.parse(lowered.stdout).violations.find((v: {name: string}) => v.name === 'redness').threshold, 0)
  const typo = await runInProcess(['scan', red, '--config', policy, '--threshold', 'redniss=0.2'], {env})
  assert.is(typo.code, 2)
  assert.is(typo.stderr, 'mod: invalid_config: --threshold: the policy has no category "redniss"; did you mean "redness"?\n')
  // A name in the wrong case is the nearest of all, as the policy file's own check says.
  const upper = await runInProcess(['scan', red, '--config', policy, '--disable', 'REDNESS'], {env})
  assert.is(upper.stderr, 'mod: invalid_config: --disable: the policy has no category "REDNESS"; did you mean "redness"?\n')
  const range = await runInProcess(['scan', red, '--config', policy, '--threshold', 'redness=1.5'], {env})
  assert.is(range.stderr, 'mod: invalid_config: --threshold redness=1.5: a threshold is a number from 0 to 1\n')
})

test('a policy file found by search is named on stderr; policy show prints the policy in force as a valid policy file', async () => {
  const project = join(dir.path, 'project')
  const below = join(project, 'uploads', 'today')
  mkdirSync(below, {recursive: true})
  writeFileSync(join(project, '.modrc.yaml'), 'categories:\n  redness:\n    prompts: ["red"]\n    threshold: 0.7\n  tobacco:\n    enabled: false\n')
  writeFileSync(join(below, 'red.png'), await solidPng(255, 0, 0))
  const r = await runInProcess(['scan', 'red.png', '--ndjson'], {env, cwd: below})
  assert.is(r.code, 1)
  const summary = '1 scanned: 0 safe, 1 unsafe, 0 errors\n'
  assert.is(r.stderr, `mod: policy: ${join(project, '.modrc.yaml')} (found from the current folder; --config names another)\n${summary}`)
  const named = await runInProcess(['scan', 'red.png', '--ndjson', '--config', join(project, '.modrc.yaml')], {env, cwd: below})
  assert.is(named.stderr, summary)

  const show = await runInProcess(['policy', 'show', '--disable', 'weapons'], {env, cwd: below})
  assert.is(show.code, 0, show.stderr)
  assert.is(show.stdout.split('\n')[0], `# policy in force: ${join(project, '.modrc.yaml')} (found from the current folder)`)
  const shown = parse(show.stdout) as {categories: Record<string, {threshold?: number; enabled?: boolean; parent?: string | null}>}
  assert.is(shown.categories.redness.threshold, 0.7)
  assert.equal(shown.categories.tobacco, {enabled: false})
  assert.equal(shown.categories.weapons, {enabled: false})
  assert.is(shown.categories.gore.parent, 'violence')
  const file = join(dir.path, 'effective.yaml')
  writeFileSync(file, show.stdout)
  const valid = await runInProcess(['policy', 'validate', file], {env})
  assert.is(valid.code, 0, valid.stderr)
  assert.match(valid.stdout, /disabled:\s+weapons, tobacco/)
})

test.run()

import {spawn, spawnSync} from 'node:child_process'
import {chmodSync, existsSync, mkdirSync, readdirSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {extractTag, INSTALL_CALLS, npmStandIn, REAL_NPM, repositoryAtTag} from './helpers/checkout.js'
import {solidPng, tempDir, TOY_MODEL, writeRednessPolicy} from './helpers/cli.js'
import {CLEAN_GIT_ENV, git} from './helpers/git.js'
import {pythonTools} from './helpers/python-tools.js'
import {testUnless} from './helpers/skip.js'
import {warmCacheDir} from './helpers/warm-cache.js'

/**
 * The pre-commit hook as a user gets it: a throwaway repository whose .pre-commit-config.yaml names this
 * repository (a clone at a tag) and the hook's id, nothing else; the real pre-commit runs it offline, on the toy
 * model, with no `mod` on PATH: the hook installs mod in pre-commit's clone on its first run.
 */

const dir = tempDir()
let hooks: {path: string; tag: string}
test.before(() => {
  hooks = repositoryAtTag(dir.path)
})
test.after(() => dir.remove())

const tools = pythonTools()
testUnless('skip' in tools ? tools.skip : undefined, 'the mod-scan hook installs mod on its first run, refuses a red image, passes once it is blue, and fails without the model its policy needs', async () => {
  if ('skip' in tools) return
  const npm = npmStandIn(dir.path)
  const project = join(dir.path, 'project')
  mkdirSync(join(project, 'img'), {recursive: true})
  git(project, 'init', '-q', '-b', 'main')
  writeRednessPolicy(project)
  writeFileSync(
    join(project, '.pre-commit-config.yaml'),
    `repos:\n  - repo: ${hooks.path}\n    rev: ${hooks.tag}\n    hooks:\n      - id: mod-scan\n        args: [--config, policy.yaml]\n`,
  )
  writeFileSync(join(project, 'img', 'photo.png'), await solidPng(255, 0, 0))
  writeFileSync(join(project, 'notes.md'), 'not an image\n')
  // An image pre-commit tags as one that mod does not decode: the hook leaves it out.
  writeFileSync(join(project, 'img', 'logo.svg'), '<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>\n')
  git(project, 'add', '-A')
  const home = join(dir.path, 'pre-commit-home')
  const env: Record<string, string> = {
    ...(Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MOD_'))) as Record<string, string>),
    ...CLEAN_GIT_ENV,
    ...npm.env,
    PATH: [npm.path, process.env.PATH].filter(Boolean).join(':'),
    PRE_COMMIT_HOME: home,
    MOD_MODEL_DIR: TOY_MODEL,
    MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache')),
    NO_COLOR: '1',
  }
  assert.is.not(spawnSync('sh', ['-c', 'command -v mod'], {env}).status, 0, 'no mod on PATH')
  const run = (e: Record<string, string> = env) => spawnSync(tools.python, ['-m', 'pre_commit', 'run', '--all-files', '--color', 'never'], {cwd: project, env: e, encoding: 'utf8'})

  const red = run()
  assert.is(red.status, 1, red.stdout + red.stderr)
  assert.match(red.stdout, /^mod scan\.+Failed$/m)
  // pre-commit's clone of the hook repository, where the hook installed mod.
  const [clone] = readdirSync(home).filter((d) => d.startsWith('repo')).map((d) => join(home, d))
  assert.match(red.stdout, `mod: first run of this hook's rev: installing mod in ${clone} (npm ci, the build)`)
  if (!REAL_NPM) assert.equal(npm.calls(), INSTALL_CALLS.map((c) => [clone, c]))
  assert.match(red.stdout, /^UNSAFE {2}img\/photo\.png {2}redness 1\.00>=0\.5$/m)
  assert.not.match(red.stdout, /notes\.md|logo\.svg/)

  writeFileSync(join(project, 'img', 'photo.png'), await solidPng(0, 0, 255))
  git(project, 'add', '-A')
  const blue = run()
  assert.is(blue.status, 0, blue.stdout + blue.stderr)
  assert.match(blue.stdout, /^mod scan\.+Passed$/m)
  if (!REAL_NPM) assert.is(npm.calls().length, INSTALL_CALLS.length, 'installed once')

  // Without the CLIP model nothing can score the policy's custom category: the hook fails rather than pass the
  // image unchecked, and pre-commit shows why.
  const {MOD_MODEL_DIR: _, ...noClip} = env
  const unchecked = run({...noClip, MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'hook-no-clip-cache'))})
  assert.is(unchecked.status, 1, unchecked.stdout + unchecked.stderr)
  assert.match(unchecked.stdout, /^mod scan\.+Failed$/m)
  assert.not.match(unchecked.stdout, /installing mod/)
  assert.match(unchecked.stdout, /^mod: not evaluated: [^(]*\bredness\b[^(]* \(no CLIP model installed; run `mod models pull fast` to score them/m, unchecked.stdout)
})

if (!REAL_NPM) {
  test('two first runs of the hook at once install once; a lock left by a run that died is taken over', async () => {
    const npm = npmStandIn(join(dir.path, 'concurrent'))
    const checkout = extractTag(hooks, join(dir.path, 'concurrent', 'hook-clone'))
    // npm ci takes a second here, so that the second run finds the first one installing.
    const slow = join(dir.path, 'concurrent', 'slow-npm')
    mkdirSync(slow)
    writeFileSync(join(slow, 'npm'), `#!/bin/sh\n[ "$1" = ci ] && sleep 1\nexec '${join(npm.path, 'npm')}' "$@"\n`)
    chmodSync(join(slow, 'npm'), 0o755)
    const env = {...process.env, PATH: `${slow}:${process.env.PATH}`}
    const hook = join(checkout, 'scripts', 'pre-commit-hook.sh')
    const version = () =>
      new Promise<{code: number | null; out: string}>((done) => {
        const child = spawn(hook, ['--version'], {env})
        let out = ''
        child.stdout.on('data', (d) => (out += d))
        child.stderr.on('data', (d) => (out += d))
        child.on('close', (code) => done({code, out}))
      })
    const both = await Promise.all([version(), version()])
    for (const r of both) {
      assert.is(r.code, 0, r.out)
      assert.match(r.out, /^@mod-moderation\/cli\/\d+\.\d+\.\d+ /m)
    }
    assert.equal(npm.calls(), INSTALL_CALLS.map((c) => [checkout, c]))
    assert.not.ok(existsSync(join(checkout, '.mod-install.lock')))

    // A run killed while installing leaves its lock and no stamp; the next run takes the lock over and installs.
    spawnSync('rm', ['-rf', join(checkout, 'dist', '.hook-installed')])
    mkdirSync(join(checkout, '.mod-install.lock'))
    const dead = spawnSync('sh', ['-c', 'echo $$']).stdout.toString().trim()
    writeFileSync(join(checkout, '.mod-install.lock', 'pid'), `${dead}\n`)
    const again = await version()
    assert.is(again.code, 0, again.out)
    assert.is(npm.calls().length, 2 * INSTALL_CALLS.length)
  })
}

test.run()

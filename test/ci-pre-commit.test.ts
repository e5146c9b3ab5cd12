import {spawnSync} from 'node:child_process'
import {mkdirSync, readdirSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {INSTALL_CALLS, npmStandIn, REAL_NPM, repositoryAtTag} from './helpers/checkout.js'
import {solidPng, tempDir, TOY_MODEL, writeRednessPolicy} from './helpers/cli.js'
import {CLEAN_GIT_ENV, git} from './helpers/git.js'
import {pythonTools} from './helpers/python-tools.js'
import {warmCacheDir} from './helpers/warm-cache.js'

/**
 * The pre-commit hook as a user gets it: a throwaway repository whose .pre-commit-config.yaml names this
 * repository (a clone at a tag) and the hook's id, nothing else; the real pre-commit runs it offline, on the toy
 * model, with no `mod` on PATH: the hook installs mod in pre-commit's clone on its first run.
 */

const dir = tempDir()
test.after(() => dir.remove())

const tools = pythonTools()
if ('skip' in tools) console.log(`skipping the pre-commit hook test: ${tools.skip}`)
else {
  test('the mod-scan hook installs mod on its first run, refuses a red image, passes once it is blue, and fails without the model its policy needs', async () => {
    const npm = npmStandIn(dir.path)
    const hooks = repositoryAtTag(dir.path)
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
}

test.run()

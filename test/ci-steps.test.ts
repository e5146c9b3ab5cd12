import {spawnSync} from 'node:child_process'
import {chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'
import {parse} from 'yaml'

import {BIN, ROOT, solidPng, tempDir, TOY_MODEL, writeRednessPolicy} from './helpers/cli.js'
import {CLEAN_GIT_ENV, git} from './helpers/git.js'
import {pythonTools} from './helpers/python-tools.js'
import {skip} from './helpers/skip.js'
import {warmCacheDir} from './helpers/warm-cache.js'

/**
 * The ready-made CI steps run as CI would run them, offline, on the toy model: the pre-commit hook by the real
 * pre-commit, the GitHub Action's shell steps in order with its inputs (its `uses:` steps are skipped, with a line
 * saying so). `mod` is a shim on PATH for the built bin/run.js, as `npm install --global` would put it.
 */

const dir = tempDir()
const shims = join(dir.path, 'bin')
const baseEnv = (): Record<string, string> => ({
  ...(Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MOD_') && !k.startsWith('GITHUB_') && !k.startsWith('INPUT_'))) as Record<string, string>),
  ...CLEAN_GIT_ENV,
  PATH: `${shims}:${process.env.PATH}`,
  MOD_MODEL_DIR: TOY_MODEL,
  NO_COLOR: '1',
})

test.before(() => {
  mkdirSync(shims, {recursive: true})
  writeFileSync(join(shims, 'mod'), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`)
  chmodSync(join(shims, 'mod'), 0o755)
})

test.after(() => dir.remove())

// ---- the GitHub Action -------------------------------------------------------------------------------------------

interface Step {
  name?: string
  id?: string
  uses?: string
  run?: string
  shell?: string
  if?: string
  env?: Record<string, string>
}
interface Action {
  inputs: Record<string, {description: string; default?: string}>
  outputs: Record<string, {value: string}>
  runs: {using: string; steps: Step[]}
}
const action = parse(readFileSync(join(ROOT, 'action.yml'), 'utf8')) as Action

/** Reads KEY=VALUE lines, as GitHub reads $GITHUB_ENV and $GITHUB_OUTPUT (the action writes no multi-line values). */
function keyValues(path: string): Record<string, string> {
  if (!existsSync(path)) return {}
  return Object.fromEntries(readFileSync(path, 'utf8').split('\n').filter(Boolean).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]))
}

/**
 * Runs the action's steps as GitHub's runner does for a composite action: `run:` steps with `bash --noprofile
 * --norc -eo pipefail`, `${{ }}` expressions of their `env:` replaced (an expression the runner here does not
 * know fails the test), $GITHUB_ENV carried to the next steps, outputs collected, and the steps after a failed
 * one not run.
 */
function runAction(
  workspace: string,
  given: Record<string, string>,
  // only: run just the steps with these ids; env: variables set for every step (a value '' removes the variable)
  opts: {only?: string[]; env?: Record<string, string>} = {},
): {failed: boolean; log: string; outputs: Record<string, string>; skipped: string[]; env: Record<string, string>} {
  for (const name of Object.keys(given)) assert.ok(name in action.inputs, `the action declares no input ${name}`)
  const inputs = Object.fromEntries(Object.entries(action.inputs).map(([k, v]) => [k, given[k] ?? v.default ?? '']))
  const temp = join(workspace, '..', `runner-temp-${Object.values(given).join('-').replace(/\W/g, '')}`)
  // What the skipped actions/cache step restores: the models cache of an earlier job (the test run's warm cache).
  warmCacheDir(join(temp, 'mod-cache'))
  const stepOutputs: Record<string, Record<string, string>> = {}
  let carried: Record<string, string> = {}
  let log = ''
  const skipped: string[] = []
  const expression = (text: string): string =>
    text.replace(/\$\{\{\s*([^}]+?)\s*\}\}/g, (_, e: string) => {
      const input = /^inputs\.([\w-]+)$/.exec(e)
      if (input) return inputs[input[1]]
      const out = /^steps\.([\w-]+)\.outputs\.([\w-]+)$/.exec(e)
      if (out) return stepOutputs[out[1]]?.[out[2]] ?? ''
      if (e === 'github.action_path') return ROOT
      if (e === 'runner.temp') return temp
      throw new Error(`an expression this test does not know: ${e}`)
    })
  for (const [i, step] of action.runs.steps.entries()) {
    if (opts.only && !opts.only.includes(step.id ?? '')) continue
    if (step.uses) {
      skipped.push(step.uses)
      console.log(`skipping step ${i + 1}: uses: ${step.uses}`)
      continue
    }
    assert.is(step.shell, 'bash')
    assert.is(step.if, undefined, 'run steps decide in bash, so that this test runs them as GitHub does')
    const files = {GITHUB_ENV: join(temp, `env-${i}`), GITHUB_OUTPUT: join(temp, `output-${i}`)}
    const script = join(temp, `step-${i}.sh`)
    writeFileSync(script, step.run ?? '')
    const env = {...baseEnv(), ...opts.env, ...carried, ...files, RUNNER_TEMP: temp, GITHUB_WORKSPACE: workspace, ...Object.fromEntries(Object.entries(step.env ?? {}).map(([k, v]) => [k, expression(String(v))]))}
    for (const [k, v] of Object.entries(env)) if (v === '') delete env[k as keyof typeof env]
    const r = spawnSync('bash', ['--noprofile', '--norc', '-eo', 'pipefail', script], {cwd: workspace, env, encoding: 'utf8'})
    log += r.stdout + r.stderr
    carried = {...carried, ...keyValues(files.GITHUB_ENV)}
    if (step.id) stepOutputs[step.id] = keyValues(files.GITHUB_OUTPUT)
    if (r.status !== 0) return {failed: true, log, outputs: outputsOf(expression), skipped, env: carried}
  }
  return {failed: false, log, outputs: outputsOf(expression), skipped, env: carried}
}

function outputsOf(expression: (t: string) => string): Record<string, string> {
  return Object.fromEntries(Object.entries(action.outputs).map(([k, v]) => [k, expression(v.value)]))
}

let workspace = ''
test.before(async () => {
  workspace = join(dir.path, 'workspace')
  mkdirSync(join(workspace, 'assets'), {recursive: true})
  writeRednessPolicy(workspace)
  writeFileSync(join(workspace, 'assets', 'red.png'), await solidPng(255, 0, 0))
  writeFileSync(join(workspace, 'assets', 'blue.png'), await solidPng(0, 0, 255))
})

test('the action declares the inputs paths, config, preset, format, fail-on, strict, sarif and version, and is a composite action', () => {
  assert.is(action.runs.using, 'composite')
  assert.equal(Object.keys(action.inputs), ['paths', 'config', 'preset', 'format', 'fail-on', 'strict', 'sarif', 'version'])
  assert.equal(
    action.runs.steps.filter((s) => s.uses).map((s) => s.uses?.replace(/@.*/, '')),
    ['actions/setup-node', 'actions/cache', 'github/codeql-action/upload-sarif'],
  )
})

test('the action writes a SARIF report, names it in its outputs, and fails the job on a violation', () => {
  const r = runAction(workspace, {paths: 'assets', config: 'policy.yaml'})
  assert.ok(r.failed, r.log)
  assert.equal(r.skipped.map((s) => s.replace(/@.*/, '')), ['actions/setup-node', 'actions/cache', 'github/codeql-action/upload-sarif'])
  assert.is(r.outputs['exit-code'], '1')
  const sarif = JSON.parse(readFileSync(r.outputs.report, 'utf8'))
  assert.equal(sarif.runs[0].results.map((x: {ruleId: string; locations: {physicalLocation: {artifactLocation: {uri: string}}}[]}) => [x.ruleId, x.locations[0].physicalLocation.artifactLocation.uri]), [['redness', 'assets/red.png']])
  assert.match(r.log, /mod is on PATH/)
  assert.is(r.env.MOD_VERSION, JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version)
  assert.match(r.env.MOD_CACHE_DIR, /runner-temp-.*\/mod-cache$/)
  assert.match(r.log, /MOD_MODEL_DIR is set/)
  assert.match(r.log, /2 scanned: 1 safe, 1 unsafe, 0 errors/)
  assert.match(r.log, /mod scan exited 1 \(fail-on: violation\)/)
})

test('with fail-on: error a violation passes; format github prints the annotations; fail-on never passes anything', () => {
  const r = runAction(workspace, {paths: 'assets', config: 'policy.yaml', format: 'github', 'fail-on': 'error'})
  assert.not.ok(r.failed, r.log)
  assert.is(r.outputs.report, '')
  assert.match(r.log, /^::error file=assets\/red.png,line=1,title=mod%3A redness::redness 1.00 >= 0.5$/m)
  assert.match(r.log, /mod scan exited 1: passing \(fail-on: error\)/)
  writeFileSync(join(workspace, 'assets', 'broken.png'), 'not an image')
  const broken = runAction(workspace, {paths: 'assets/blue.png assets/broken.png', config: 'policy.yaml', format: 'junit', 'fail-on': 'error'})
  assert.ok(broken.failed, broken.log)
  assert.is(broken.outputs['exit-code'], '2')
  assert.match(readFileSync(broken.outputs.report, 'utf8'), /<error type="unsupported_media"/)
  const never = runAction(workspace, {paths: 'assets', config: 'policy.yaml', 'fail-on': 'never'})
  assert.not.ok(never.failed, never.log)
})

test('without the CLIP model, the scan and verdict steps with their default inputs fail on a custom category and annotates why; strict: false passes', () => {
  // No MOD_MODEL_DIR and a models cache without the preset: only the embedded NSFW specialist, which cannot score redness.
  const noClip = {MOD_MODEL_DIR: '', MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'no-clip-cache'))}
  const r = runAction(workspace, {paths: 'assets/blue.png', config: 'policy.yaml'}, {only: ['scan', 'verdict'], env: noClip})
  assert.ok(r.failed, r.log)
  assert.is(r.outputs['exit-code'], '2')
  assert.is(r.outputs.report, '', 'nothing was scanned, so there is no report to upload')
  assert.match(r.log, /mod scan exited 2 \(fail-on: violation\)/)
  assert.match(r.log, /^::error title=mod scan::mod: not evaluated: [^(]*\bredness\b[^(]* \(no CLIP model installed; run `mod models pull fast` to score them/m, r.log)
  const lenient = runAction(workspace, {paths: 'assets/blue.png', config: 'policy.yaml', strict: 'false'}, {only: ['scan', 'verdict'], env: noClip})
  assert.not.ok(lenient.failed, lenient.log)
  assert.is(lenient.outputs['exit-code'], '0')
  assert.match(lenient.log, /^::warning title=mod scan::mod: not evaluated: [^(]*\bredness\b/m)
  assert.match(lenient.log, /mod scan exited 0: passing/)
})

test('a bad format input fails the scan step with an annotation', () => {
  const r = runAction(workspace, {paths: 'assets', format: 'xml'})
  assert.ok(r.failed)
  assert.match(r.log, /::error title=mod scan::the format input must be sarif, junit or github, not 'xml'/)
})

// ---- the pre-commit hook -----------------------------------------------------------------------------------------

const tools = pythonTools()
if ('skip' in tools) skip('the mod-scan hook, run by pre-commit from a hook repository', tools.skip)
else {
  test('the mod-scan hook, run by pre-commit from a hook repository, refuses a red image, passes once it is blue, and fails without the model its policy needs', async () => {
    // The hook repository: this repository's .pre-commit-hooks.yaml, committed, as pre-commit clones it.
    const hooks = join(dir.path, 'hooks')
    mkdirSync(hooks)
    copyFileSync(join(ROOT, '.pre-commit-hooks.yaml'), join(hooks, '.pre-commit-hooks.yaml'))
    git(hooks, 'init', '-q', '-b', 'main')
    git(hooks, 'add', '-A')
    git(hooks, 'commit', '-qm', 'hooks')
    const rev = git(hooks, 'rev-parse', 'HEAD').trim()
    const project = join(dir.path, 'project')
    mkdirSync(join(project, 'img'), {recursive: true})
    git(project, 'init', '-q', '-b', 'main')
    writeRednessPolicy(project)
    writeFileSync(
      join(project, '.pre-commit-config.yaml'),
      `repos:\n  - repo: ${hooks}\n    rev: ${rev}\n    hooks:\n      - id: mod-scan\n        args: [--config, policy.yaml]\n`,
    )
    writeFileSync(join(project, 'img', 'photo.png'), await solidPng(255, 0, 0))
    writeFileSync(join(project, 'notes.md'), 'not an image\n')
    // An image pre-commit tags as one that mod does not decode: the hook leaves it out.
    writeFileSync(join(project, 'img', 'logo.svg'), '<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>\n')
    git(project, 'add', '-A')
    const env = {...baseEnv(), PRE_COMMIT_HOME: join(dir.path, 'pre-commit-home'), MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache'))}
    const run = (e: Record<string, string> = env) => spawnSync(tools.python, ['-m', 'pre_commit', 'run', '--all-files', '--color', 'never'], {cwd: project, env: e, encoding: 'utf8'})
    const red = run()
    assert.is(red.status, 1, red.stdout + red.stderr)
    assert.match(red.stdout, /^mod scan\.+Failed$/m)
    assert.match(red.stdout, /^UNSAFE {2}img\/photo\.png {2}redness 1\.00>=0\.5$/m)
    assert.not.match(red.stdout, /notes\.md|logo\.svg/)
    writeFileSync(join(project, 'img', 'photo.png'), await solidPng(0, 0, 255))
    git(project, 'add', '-A')
    const blue = run()
    assert.is(blue.status, 0, blue.stdout + blue.stderr)
    assert.match(blue.stdout, /^mod scan\.+Passed$/m)
    // Without the CLIP model nothing can score the policy's custom category: the hook fails rather than pass the
    // image unchecked, and pre-commit shows why.
    const {MOD_MODEL_DIR: _, ...noClip} = env as Record<string, string>
    const unchecked = run({...noClip, MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'hook-no-clip-cache'))})
    assert.is(unchecked.status, 1, unchecked.stdout + unchecked.stderr)
    assert.match(unchecked.stdout, /^mod scan\.+Failed$/m)
    assert.match(unchecked.stdout, /^mod: not evaluated: [^(]*\bredness\b[^(]* \(no CLIP model installed; run `mod models pull fast` to score them/m, unchecked.stdout)
  })
}

test.run()

import {createHash} from 'node:crypto'
import {execFileSync, spawnSync} from 'node:child_process'
import {appendFileSync, existsSync, lstatSync, mkdirSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {dirname, join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'
import {parse} from 'yaml'

import {extractTag, INSTALL_CALLS, npmStandIn, REAL_NPM, repositoryAtTag} from './helpers/checkout.js'
import {ROOT, runInProcess, solidPng, tempDir, TOY_MODEL, writeRednessPolicy} from './helpers/cli.js'
import {CLEAN_GIT_ENV} from './helpers/git.js'
import {slideshowWebp} from './helpers/slideshow.js'
import {warmCacheDir} from './helpers/warm-cache.js'

/**
 * The GitHub Action run as GitHub's runner runs a composite action, offline, on the toy model: its `run:` steps in
 * order with bash and its inputs, in a fake GITHUB_* environment (GITHUB_ENV, GITHUB_OUTPUT, GITHUB_PATH and
 * RUNNER_TEMP files in a temporary folder). The action's path is this repository at a tag, extracted as GitHub
 * downloads it; no `mod` is on PATH but the one the action installs there. actions/cache/restore and save are
 * emulated (a folder per key), the other `uses:` steps are skipped with a line saying so.
 */

const dir = tempDir()
const npm = npmStandIn(dir.path)
// The job's models cache, shared by the runs of this file: the specialist's graph, optimised for the action's
// copy of the model on the first run, is then reused.
const jobCache = warmCacheDir(join(dir.path, 'job-cache'))
const baseEnv = (): Record<string, string> => ({
  ...(Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MOD_') && !k.startsWith('GITHUB_') && !k.startsWith('INPUT_') && !k.startsWith('RUNNER_'))) as Record<string, string>),
  ...CLEAN_GIT_ENV,
  ...npm.env,
  PATH: [npm.path, process.env.PATH].filter(Boolean).join(':'),
  MOD_MODEL_DIR: TOY_MODEL,
  MOD_CACHE_DIR: jobCache,
  NO_COLOR: '1',
})

test.after(() => dir.remove())

interface Step {
  name?: string
  id?: string
  uses?: string
  run?: string
  shell?: string
  if?: string
  env?: Record<string, string>
  with?: Record<string, string>
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

/** The emulated actions/cache: key -> the folder its paths were saved in (hard links, symlinks kept). */
const caches = new Map<string, string>()
const cachePaths = (paths: string): string[] => paths.split('\n').map((p) => p.trim()).filter(Boolean)

function restoreCache(key: string, paths: string[]): string {
  const saved = caches.get(key)
  if (!saved) return ''
  // Unpacked over what is there, as actions/cache extracts its archive.
  paths.forEach((path, i) => {
    const from = join(saved, String(i))
    if (!existsSync(from)) return
    mkdirSync(dirname(path), {recursive: true})
    if (lstatSync(from).isSymbolicLink()) {
      rmSync(path, {recursive: true, force: true})
      execFileSync('cp', ['-a', from, path])
    } else {
      mkdirSync(path, {recursive: true})
      execFileSync('cp', ['-alf', `${from}/.`, path])
    }
  })
  return 'true'
}

function saveCache(key: string, paths: string[]): void {
  if (caches.has(key)) return
  const saved = join(dir.path, 'caches', String(caches.size))
  mkdirSync(saved, {recursive: true})
  paths.forEach((path, i) => existsSync(path) && execFileSync('cp', ['-al', path, join(saved, String(i))]))
  caches.set(key, saved)
}

interface ActionRun {
  failed: boolean
  log: string
  outputs: Record<string, string>
  steps: Record<string, Record<string, string>>
  skipped: string[]
  env: Record<string, string>
}

let runs = 0

/**
 * Runs the action's steps as GitHub's runner does for a composite action: `run:` steps with `bash --noprofile
 * --norc -eo pipefail`, `${{ }}` expressions and `if:` conditions evaluated (one the runner here does not know
 * fails the test), $GITHUB_ENV and $GITHUB_PATH carried to the next steps, outputs collected, and the steps after a
 * failed one not run. `skip`: ids of steps not to run; `env`: the job's variables (a value '' removes one).
 */
function runAction(actionPath: string, workspace: string, given: Record<string, string>, opts: {skip?: string[]; env?: Record<string, string>} = {}): ActionRun {
  for (const name of Object.keys(given)) assert.ok(name in action.inputs, `the action declares no input ${name}`)
  const inputs = Object.fromEntries(Object.entries(action.inputs).map(([k, v]) => [k, given[k] ?? v.default ?? '']))
  // A job's own RUNNER_TEMP, holding the warm graphs where the action puts the models cache by default.
  const temp = join(dir.path, `runner-temp-${++runs}`)
  warmCacheDir(join(temp, 'mod-cache'))
  const steps: Record<string, Record<string, string>> = {}
  let carried: Record<string, string> = {}
  const addedPath: string[] = []
  let log = ''
  const skipped: string[] = []
  const value = (e: string): string => {
    const input = /^inputs\.([\w-]+)$/.exec(e)
    if (input) return inputs[input[1]]
    const out = /^steps\.([\w-]+)\.outputs\.([\w-]+)$/.exec(e)
    if (out) return steps[out[1]]?.[out[2]] ?? ''
    const env = /^env\.(\w+)$/.exec(e)
    if (env) return carried[env[1]] ?? opts.env?.[env[1]] ?? ''
    if (e === 'github.action_path') return actionPath
    if (e === 'runner.os') return 'Linux'
    throw new Error(`an expression this test does not know: ${e}`)
  }
  const expression = (text: string): string => text.replace(/\$\{\{\s*([^}]+?)\s*\}\}/g, (_, e: string) => value(e))
  const operand = (o: string): string => (/^'.*'$/.test(o) ? o.slice(1, -1) : value(o))
  const condition = (text: string): boolean =>
    text.split('&&').every((part) => {
      const m = /^\s*(\S+)\s*(==|!=)\s*(\S+)\s*$/.exec(part)
      if (!m) throw new Error(`a condition this test does not know: ${text}`)
      return (operand(m[1]) === operand(m[3])) === (m[2] === '==')
    })
  const result = (failed: boolean): ActionRun => ({
    failed,
    log,
    outputs: Object.fromEntries(Object.entries(action.outputs).map(([k, v]) => [k, expression(v.value)])),
    steps,
    skipped,
    env: carried,
  })
  for (const [i, step] of action.runs.steps.entries()) {
    if (opts.skip?.includes(step.id ?? '')) continue
    if (step.uses) {
      if (step.if !== undefined && !condition(step.if)) continue
      const uses = step.uses.replace(/@.*/, '')
      const key = expression(step.with?.key ?? '')
      const paths = cachePaths(expression(step.with?.path ?? ''))
      if (uses === 'actions/cache/restore') steps[step.id ?? ''] = {'cache-hit': restoreCache(key, paths)}
      else if (uses === 'actions/cache/save') saveCache(key, paths)
      else {
        skipped.push(step.uses)
        log += `skipping step ${i + 1}: uses: ${step.uses}\n`
      }
      continue
    }
    assert.is(step.shell, 'bash')
    assert.is(step.if, undefined, 'run steps decide in bash, so that this test runs them as GitHub does')
    const files = {GITHUB_ENV: join(temp, `env-${i}`), GITHUB_OUTPUT: join(temp, `output-${i}`), GITHUB_PATH: join(temp, `path-${i}`)}
    const script = join(temp, `step-${i}.sh`)
    writeFileSync(script, step.run ?? '')
    const job = {...baseEnv(), ...opts.env, ...carried}
    const env: Record<string, string> = {
      ...job,
      PATH: [...addedPath, job.PATH].join(':'),
      ...files,
      RUNNER_TEMP: temp,
      RUNNER_OS: 'Linux',
      RUNNER_ARCH: 'X64',
      GITHUB_WORKSPACE: workspace,
      ...Object.fromEntries(Object.entries(step.env ?? {}).map(([k, v]) => [k, expression(String(v))])),
    }
    for (const [k, v] of Object.entries(env)) if (v === '') delete env[k]
    const r = spawnSync('bash', ['--noprofile', '--norc', '-eo', 'pipefail', script], {cwd: workspace, env, encoding: 'utf8'})
    log += r.stdout + r.stderr
    carried = {...carried, ...keyValues(files.GITHUB_ENV)}
    if (existsSync(files.GITHUB_PATH)) for (const p of readFileSync(files.GITHUB_PATH, 'utf8').split('\n').filter(Boolean)) addedPath.unshift(p)
    if (step.id) steps[step.id] = keyValues(files.GITHUB_OUTPUT)
    if (r.status !== 0) return result(true)
  }
  return result(false)
}

let repository: {path: string; tag: string}
let actionPath = ''
let workspace = ''
test.before(async () => {
  repository = repositoryAtTag(dir.path)
  actionPath = extractTag(repository, join(dir.path, '_actions', 'first-job'))
  workspace = join(dir.path, 'workspace')
  mkdirSync(join(workspace, 'assets'), {recursive: true})
  writeRednessPolicy(workspace)
  writeFileSync(join(workspace, 'assets', 'red.png'), await solidPng(255, 0, 0))
  writeFileSync(join(workspace, 'assets', 'blue.png'), await solidPng(0, 0, 255))
})

const sha16 = (path: string): string => createHash('sha256').update(readFileSync(path)).digest('hex').slice(0, 16)

test('the action declares the inputs paths, config, baseline, preset, format, fail-on, strict and sarif, and is a composite action', () => {
  assert.is(action.runs.using, 'composite')
  assert.equal(Object.keys(action.inputs), ['paths', 'config', 'baseline', 'preset', 'format', 'fail-on', 'strict', 'sarif'])
  assert.equal(
    action.runs.steps.filter((s) => s.uses).map((s) => s.uses?.replace(/@.*/, '')),
    ['actions/setup-node', 'actions/cache/restore', 'actions/cache/save', 'actions/cache/restore', 'actions/cache/save', 'github/codeql-action/upload-sarif'],
  )
  // The CodeQL Action's v3 is deprecated from December 2026 (GitHub's changelog of 2025-10-28): its runs warn, then stop.
  assert.equal(action.runs.steps.filter((s) => s.uses?.startsWith('github/codeql-action/')).map((s) => s.uses), ['github/codeql-action/upload-sarif@v4'])
  // Node 20, which the v4 majors of setup-node and cache run on, is being retired from GitHub's runners; their v5 run on Node 24.
  assert.equal([...new Set(action.runs.steps.filter((s) => s.uses?.startsWith('actions/')).map((s) => s.uses?.replace(/^.*@/, '')))], ['v5'])
})

test('the action installs mod from its own checkout with install scripts off, puts it on PATH, writes a SARIF report and fails the job on a violation', () => {
  assert.is.not(spawnSync('sh', ['-c', 'command -v mod'], {env: baseEnv()}).status, 0, 'no mod on PATH before the action')
  const r = runAction(actionPath, workspace, {paths: 'assets', config: 'policy.yaml'})
  assert.ok(r.failed, r.log)
  // Node 22 or newer is used as it is; an older one is replaced by Node 24 (the setup-node step).
  const oldNode = Number(process.versions.node.split('.')[0]) < 22
  assert.is(r.steps.node.setup, String(oldNode))
  assert.is(r.skipped.some((s) => s.startsWith('actions/setup-node@')), oldNode)
  assert.match(r.log, oldNode ? /is older than 22: setting up Node\.js 24/ : /mod runs on the runner's Node\.js v/)
  if (!REAL_NPM) assert.equal(npm.calls(), INSTALL_CALLS.map((c) => [actionPath, c]))
  // Cached under the lockfile's hash and the checkout's.
  assert.match(r.steps.key.install, new RegExp(`^mod-install-Linux-X64-${sha16(join(actionPath, 'package-lock.json'))}-[0-9a-f]{16}$`))
  // Both caches are saved although the job fails (actions/cache saves at the end of a successful job only).
  assert.equal([...caches.keys()], [r.steps.key.install, `mod-models-Linux-fast-${r.steps.key.version}`])
  assert.is(r.outputs['exit-code'], '1')
  const sarif = JSON.parse(readFileSync(r.outputs.report, 'utf8'))
  assert.equal(sarif.runs[0].results.map((x: {ruleId: string; locations: {physicalLocation: {artifactLocation: {uri: string}}}[]}) => [x.ruleId, x.locations[0].physicalLocation.artifactLocation.uri]), [['redness', 'assets/red.png']])
  assert.is(r.steps.key.version, JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version)
  // The action leaves no MOD_* variable of its own in the job's environment, which mod would warn of on every run.
  assert.equal(Object.keys(r.env).filter((k) => k.startsWith('MOD_')), ['MOD_CACHE_DIR'])
  assert.not.match(r.log, /is not a variable mod reads/)
  assert.is(r.env.MOD_CACHE_DIR, jobCache, "the job's MOD_CACHE_DIR is kept")
  assert.match(r.log, /MOD_MODEL_DIR is set/)
  assert.match(r.log, /2 scanned: 1 safe, 1 unsafe, 0 errors/)
  assert.match(r.log, /mod scan exited 1 \(fail-on: violation\)/)
})

test('a later job restores the install from the cache into its fresh checkout of the action and runs no npm', () => {
  const before = npm.calls().length
  const fresh = extractTag(repository, join(dir.path, '_actions', 'later-job'))
  const r = runAction(fresh, workspace, {paths: 'assets/blue.png', config: 'policy.yaml'})
  assert.not.ok(r.failed, r.log)
  assert.is(r.steps['install-cache']['cache-hit'], 'true')
  assert.match(r.log, new RegExp(`mod is installed in ${fresh} \\(mod-install-`))
  assert.is(npm.calls().length, before)
  assert.is(r.outputs['exit-code'], '0')
})

test('the install key changes with the lockfile and with what the build reads (src, package.json, tsconfig), not with node_modules, dist or the rest of the checkout', () => {
  const checkout = join(dir.path, 'key-checkout')
  for (const folder of ['src', 'dist', 'node_modules']) mkdirSync(join(checkout, folder), {recursive: true})
  writeFileSync(join(checkout, 'package-lock.json'), '{}')
  writeFileSync(join(checkout, 'src', 'scan.ts'), '')
  const key = () => execFileSync(process.execPath, [join(ROOT, 'scripts', 'checkout-key.mjs'), checkout], {encoding: 'utf8'}).trim()
  const [lock, tree] = key().split('-')
  assert.is(lock, sha16(join(checkout, 'package-lock.json')))
  writeFileSync(join(checkout, 'dist', 'scan.js'), '')
  writeFileSync(join(checkout, 'node_modules', 'x.js'), '')
  writeFileSync(join(checkout, 'README.md'), 'read from the checkout, never from the cache\n')
  assert.is(key(), `${lock}-${tree}`)
  writeFileSync(join(checkout, 'tsconfig.json'), '{}')
  const configured = key().split('-')
  assert.is(configured[0], lock)
  assert.is.not(configured[1], tree)
  appendFileSync(join(checkout, 'src', 'scan.ts'), '\n')
  const edited = key().split('-')
  assert.is(edited[0], lock)
  assert.is.not(edited[1], configured[1])
  appendFileSync(join(checkout, 'package-lock.json'), '\n')
  assert.is.not(key().split('-')[0], lock)
})

test('with fail-on: error a violation passes unless an input could not be scanned (or, strict, an animation was not scored whole) beside it; format github prints the annotations; fail-on never passes anything', async () => {
  const r = runAction(actionPath, workspace, {paths: 'assets', config: 'policy.yaml', format: 'github', 'fail-on': 'error'})
  assert.not.ok(r.failed, r.log)
  assert.is(r.outputs.report, '')
  assert.match(r.log, /^::error file=assets\/red.png,line=1,title=mod%3A redness::redness 1.00 >= 0.5$/m)
  assert.match(r.log, /mod scan exited 1: passing \(fail-on: error\)/)
  writeFileSync(join(workspace, 'assets', 'broken.png'), 'not an image')
  const broken = runAction(actionPath, workspace, {paths: 'assets/blue.png assets/broken.png', config: 'policy.yaml', format: 'junit', 'fail-on': 'error'})
  rmSync(join(workspace, 'assets', 'broken.png'))
  assert.ok(broken.failed, broken.log)
  assert.is(broken.outputs['exit-code'], '2')
  assert.match(readFileSync(broken.outputs.report, 'utf8'), /<error type="unsupported_media"/)
  // A violation beside it exits 1, which says nothing of the error: the job still fails.
  writeFileSync(join(workspace, 'assets', 'broken.png'), 'not an image')
  const both = runAction(actionPath, workspace, {paths: 'assets/red.png assets/broken.png', config: 'policy.yaml', format: 'github', 'fail-on': 'error'})
  rmSync(join(workspace, 'assets', 'broken.png'))
  assert.ok(both.failed, both.log)
  assert.equal([both.outputs['exit-code'], both.outputs.errors], ['1', '1'])
  assert.match(both.log, /mod scan exited 1, and 1 input\(s\) could not be scanned \(fail-on: error\)/)
  // A path that does not exist is an input that could not be scanned too, though the summary counts it apart.
  const missing = runAction(actionPath, workspace, {paths: 'assets/red.png assets/gone.png', config: 'policy.yaml', format: 'github', 'fail-on': 'error'})
  assert.ok(missing.failed, missing.log)
  assert.equal([missing.outputs['exit-code'], missing.outputs.errors], ['1', '1'])
  assert.match(missing.log, /^::error file=assets\/gone.png,line=1,title=mod%3A could not scan \(not_found\)::/m)
  // So is an animation not scored whole, which --strict (the default) fails: a violation beside it does not pass it.
  writeFileSync(join(workspace, 'assets', 'slides.webp'), await slideshowWebp(70))
  const partial = runAction(actionPath, workspace, {paths: 'assets/red.png assets/slides.webp', config: 'policy.yaml', format: 'github', 'fail-on': 'error'})
  const lenientPartial = runAction(actionPath, workspace, {paths: 'assets/red.png assets/slides.webp', config: 'policy.yaml', format: 'github', 'fail-on': 'error', strict: 'false'})
  rmSync(join(workspace, 'assets', 'slides.webp'))
  assert.ok(partial.failed, partial.log)
  assert.equal([partial.outputs['exit-code'], partial.outputs.errors], ['1', '0'])
  assert.match(partial.log, /mod scan exited 1, and 1 animation\(s\) had pictures left unscored \(strict, fail-on: error\)/)
  assert.not.ok(lenientPartial.failed, lenientPartial.log)
  assert.is(r.outputs.errors, '0')
  const never = runAction(actionPath, workspace, {paths: 'assets', config: 'policy.yaml', 'fail-on': 'never'})
  assert.not.ok(never.failed, never.log)
})

test('with a baseline, the images it records pass and a new flagged image still fails', async () => {
  const recorded = await runInProcess(['scan', 'assets', '--config', 'policy.yaml', '--write-baseline', 'mod-baseline.json'], {env: {MOD_MODEL_DIR: TOY_MODEL, MOD_CACHE_DIR: jobCache}, cwd: workspace})
  assert.is(recorded.code, 1, recorded.stderr)
  const accepted = runAction(actionPath, workspace, {paths: 'assets', config: 'policy.yaml', baseline: 'mod-baseline.json', format: 'github'})
  assert.not.ok(accepted.failed, accepted.log)
  assert.is(accepted.outputs['exit-code'], '0')
  assert.not.match(accepted.log, '::error file=assets/red.png')
  writeFileSync(join(workspace, 'assets', 'new-red.png'), await solidPng(250, 0, 0))
  const added = runAction(actionPath, workspace, {paths: 'assets', config: 'policy.yaml', baseline: 'mod-baseline.json', format: 'github'})
  rmSync(join(workspace, 'assets', 'new-red.png'))
  rmSync(join(workspace, 'mod-baseline.json'))
  assert.ok(added.failed, added.log)
  assert.match(added.log, /^::error file=assets\/new-red.png,line=1,title=mod%3A redness::/m)
})

test('without the CLIP model, the action with its default inputs fails on a custom category and annotates why; strict: false passes', () => {
  // No MOD_MODEL_DIR and a models cache without the preset (its download skipped): only the embedded NSFW
  // specialist, which cannot score redness. Without a MOD_CACHE_DIR of the job's, the cache is in RUNNER_TEMP.
  const noClip = {skip: ['pull'], env: {MOD_MODEL_DIR: '', MOD_CACHE_DIR: ''}}
  const r = runAction(actionPath, workspace, {paths: 'assets/blue.png', config: 'policy.yaml'}, noClip)
  assert.ok(r.failed, r.log)
  assert.match(r.env.MOD_CACHE_DIR, /runner-temp-\d+\/mod-cache$/)
  assert.is(r.outputs['exit-code'], '2')
  assert.is(r.outputs.report, '', 'nothing was scanned, so there is no report to upload')
  assert.match(r.log, /mod scan exited 2 \(fail-on: violation\)/)
  assert.match(r.log, /^::error title=mod scan::mod: not evaluated: [^(]*\bredness\b[^(]* \(no CLIP model installed; run `mod models pull fast` to score them/m, r.log)
  const lenient = runAction(actionPath, workspace, {paths: 'assets/blue.png', config: 'policy.yaml', strict: 'false'}, noClip)
  assert.not.ok(lenient.failed, lenient.log)
  assert.is(lenient.outputs['exit-code'], '0')
  assert.match(lenient.log, /^::warning title=mod scan::mod: not evaluated: [^(]*\bredness\b/m)
  assert.match(lenient.log, /mod scan exited 0: passing/)
})

test('a bad format input fails the scan step with an annotation', () => {
  const r = runAction(actionPath, workspace, {paths: 'assets', format: 'xml'})
  assert.ok(r.failed)
  assert.match(r.log, /::error title=mod scan::the format input must be sarif, junit or github, not 'xml'/)
})

test.run()

// Nothing leaves the user's machine and nothing is written outside MOD_CACHE_DIR: the built CLI, a served
// request and the test runner run with a fresh HOME and TMPDIR, and both stay empty. onnxruntime's own telemetry
// (on by default in 1.30) would write a device id under HOME and a session file and a log into TMPDIR.
import {spawn} from 'node:child_process'
import {existsSync, readdirSync, readFileSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join, relative} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {launchChromium} from './helpers/chromium.js'
import {BIN, ROOT, solidPng, tempDir, TOY_MODEL} from './helpers/cli.js'

/** onnxruntime keeps its telemetry off in CI and unit-test runs it detects: these must not hide the default. */
const TELEMETRY_SWITCHES = [
  'CI',
  'GITHUB_ACTIONS',
  'GITLAB_CI',
  'CIRCLECI',
  'TRAVIS',
  'JENKINS_URL',
  'CODEBUILD_BUILD_ID',
  'BUILDKITE',
  'TEAMCITY_VERSION',
  'APPVEYOR',
  'BITBUCKET_BUILD_NUMBER',
  'SYSTEM_TEAMFOUNDATIONCOLLECTIONURI',
  'ORT_RUNNING_UNIT_TESTS',
  'ORT_DISABLE_TELEMETRY',
]

const work = tempDir('mod-privacy-work-')
const cacheDir = join(work.path, 'cache')
const image = join(work.path, 'red.png')
const made: {remove: () => void}[] = []

test.after(() => {
  for (const dir of made) dir.remove()
  work.remove()
})

/** A fresh, empty HOME and TMPDIR for one child process tree. */
function freshDirs(): {home: string; tmp: string} {
  const home = tempDir('mod-privacy-home-')
  const tmp = tempDir('mod-privacy-tmp-')
  made.push(home, tmp)
  return {home: home.path, tmp: tmp.path}
}

function childEnv(dirs: {home: string; tmp: string}, extra: Record<string, string> = {}): Record<string, string> {
  const kept = Object.entries(process.env).filter(
    ([k, v]) => v !== undefined && !k.startsWith('MOD_') && !k.startsWith('XDG_') && !TELEMETRY_SWITCHES.includes(k),
  )
  return {...(Object.fromEntries(kept) as Record<string, string>), HOME: dirs.home, TMPDIR: dirs.tmp, NO_COLOR: '1', ...extra}
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, {recursive: true, withFileTypes: true}).map((e) => relative(dir, join(e.parentPath, e.name)))
}

function run(args: string[], env: Record<string, string>): Promise<{code: number | null; stderr: string}> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [BIN, ...args], {cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe']})
    let stderr = ''
    child.stderr.on('data', (d) => (stderr += d))
    child.on('error', fail)
    child.on('close', (code) => done({code, stderr}))
  })
}

test('mod scan writes nothing into HOME or TMPDIR', async () => {
  writeFileSync(image, await solidPng(255, 0, 0))
  const dirs = freshDirs()
  const r = await run(['scan', image, '--model-dir', TOY_MODEL, '--cache-dir', cacheDir], childEnv(dirs))
  assert.is(r.code, 0, r.stderr)
  assert.equal(filesUnder(dirs.home), [])
  assert.equal(filesUnder(dirs.tmp), [])
})

test('mod serve with two workers answers a moderation and writes nothing into HOME or TMPDIR', async () => {
  const dirs = freshDirs()
  const env = childEnv(dirs, {MOD_MODEL_DIR: TOY_MODEL, MOD_CACHE_DIR: cacheDir})
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--workers', '2'], {cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe']})
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  try {
    const base = await new Promise<string>((resolve, reject) => {
      let stderr = ''
      child.stderr.setEncoding('utf8').on('data', (d: string) => {
        stderr += d
        const m = /"msg":"listening on (http:\/\/127\.0\.0\.1:\d+) \(2 workers\)"/.exec(stderr)
        if (m) resolve(m[1])
      })
      child.on('exit', () => reject(new Error(`serve exited before listening:\n${stderr}`)))
    })
    const body = new FormData()
    body.append('file', new Blob([new Uint8Array(await solidPng(255, 0, 0))], {type: 'image/png'}), 'red.png')
    const res = await fetch(`${base}/v1/moderate`, {method: 'POST', body})
    assert.is(res.status, 200)
    assert.is(((await res.json()) as {is_safe: boolean}).is_safe, true)
    child.kill('SIGTERM')
    assert.is(await exited, 0)
  } finally {
    child.kill('SIGKILL')
  }
  assert.equal(filesUnder(dirs.home), [])
  assert.equal(filesUnder(dirs.tmp), [])
})

test('the test runner starts its processes with telemetry off: the warm-cache scan and an engine test file write nothing into HOME or TMPDIR; the shell\'s MOD_* and proxy variables reach no test; a process a file left running is gone with the run', async () => {
  const dirs = freshDirs()
  // One small test file that opens onnxruntime in its own process, after the runner's warm-cache scan, and one that
  // looks at its variables (test/runner-env.test.ts).
  const proxy = 'http://10.255.255.1:9'
  const shell = {MOD_API_KEY: 'from-the-shell', HTTPS_PROXY: proxy, http_proxy: proxy, NO_PROXY: '', npm_config_proxy: proxy}
  // The runner's folder in memory (/dev/shm, where it is a roomy tmpfs) goes at its end, as its other folders do.
  const inMemory = () => (existsSync('/dev/shm') ? readdirSync('/dev/shm').filter((name) => name.startsWith('mod-test-')) : [])
  const before = inMemory()
  const child = spawn(process.execPath, [join(ROOT, 'test', 'run.mjs'), join('test', 'lib', 'model', 'session.test.ts'), join('test', 'runner-env.test.ts')], {
    cwd: ROOT,
    env: childEnv(dirs, shell),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout.on('data', (d) => (out += d))
  child.stderr.on('data', (d) => (out += d))
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  assert.is(code, 0, out)
  assert.equal(inMemory().filter((name) => !before.includes(name)), [])
  assert.not.match(out, 'the warm cache was not built')
  // The runner gives its tests a TMPDIR of their own and names what they leave there (onnxruntime's telemetry files).
  assert.not.match(out, "left in the tests' TMPDIR")
  assert.match(out, /^2 test files in /m)
  assert.match(out, /^=== test\/runner-env\.test\.ts \(3 passed, 0 failed, 0 skipped/m)
  const left = Number(/\[left running\] (\d+)$/m.exec(out)?.[1])
  assert.ok(left > 0, out)
  // Gone, or dead and not yet reaped (its parent was killed; a container's first process may not reap orphans).
  const state = existsSync(`/proc/${left}/stat`) ? readFileSync(`/proc/${left}/stat`, 'latin1').split(') ')[1]?.[0] : 'gone'
  assert.ok(state === 'gone' || state === 'Z', `process ${left} left running: ${state}`)
  assert.equal(filesUnder(dirs.home), [])
  assert.equal(filesUnder(dirs.tmp), [])
})

test('package.json turns off the install-time analytics of @scarf/scarf (a dependency of swagger-ui-dist)', () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {scarfSettings?: unknown}
  assert.equal(pkg.scarfSettings, {enabled: false})
})

test('package.json lets no install script of the dependency tree run (npm 11 reads allowScripts)', () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {allowScripts?: Record<string, boolean>}
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {packages: Record<string, {hasInstallScript?: boolean}>}
  const withScripts = new Set(
    Object.entries(lock.packages)
      .filter(([path, p]) => path !== '' && p.hasInstallScript)
      .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length)),
  )
  assert.equal(Object.keys(pkg.allowScripts ?? {}).sort(), [...withScripts].sort())
  assert.ok(Object.values(pkg.allowScripts ?? {}).every((allowed) => allowed === false))
})

test("the tests' chromium writes nothing into the home of whoever runs them, and its own home is gone once it closes", async () => {
  const dirs = freshDirs()
  const {HOME, XDG_CONFIG_HOME, XDG_CACHE_HOME} = process.env
  Object.assign(process.env, {HOME: dirs.home})
  delete process.env.XDG_CONFIG_HOME
  delete process.env.XDG_CACHE_HOME
  try {
    const browser = await launchChromium()
    const page = await browser.newPage()
    await page.setContent('<p>a page</p>')
    assert.is(await page.textContent('p'), 'a page')
    await browser.close()
  } finally {
    for (const [k, v] of Object.entries({HOME, XDG_CONFIG_HOME, XDG_CACHE_HOME})) {
      if (v === undefined) delete process.env[k]
      else process.env[k] = v
    }
  }
  // Chromium kept its crash reports' settings in ~/.config/chromium and GTK its dconf cache in ~/.cache/dconf.
  assert.equal(filesUnder(dirs.home), [])
  assert.equal(readdirSync(tmpdir()).filter((name) => name.startsWith('mod-chromium-home-')), [])
})

test.run()

#!/usr/bin/env node
// Runs every test/**/*.test.ts in its own process (uvu suites, from the JavaScript copy test/transpile.mjs writes
// at the start), two at a time, and ends with
// the line "N passed, N failed". A file that crashes before uvu prints its summary counts as one failure.
// Every file starts without the caller's MOD_* variables (tests that need one set it themselves), and each
// file's wall time is printed with its result; the slowest files are listed at the end. The times (wall and CPU)
// are kept in test/fixtures/tmp/ so that the next run starts the slowest files first (new files before all of
// them): the two workers then finish close together instead of one waiting on a slow file started last. A file
// that mostly waited last time runs as a third beside two that compute.
import {spawn} from 'node:child_process'
import {mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync} from 'node:fs'
import {join, relative, sep} from 'node:path'
import {fileURLToPath} from 'node:url'
import {mirrorOf, transpile} from './transpile.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
// `--build`: build dist (npm run build) while the first test files run, those that need no build.
const building = process.argv.includes('--build')
const filter = process.argv.slice(2).filter((a) => a !== '--build')

function find(dir) {
  return readdirSync(dir).sort().flatMap((name) => {
    const p = join(dir, name)
    if (name === 'fixtures' || name === 'node_modules') return []
    if (statSync(p).isDirectory()) return find(p)
    return name.endsWith('.test.ts') ? [p] : []
  })
}

const TIMES = join(root, 'test', 'fixtures', 'tmp', 'test-times.json')
// A fresh clone has no times of its own yet: it starts from those of a full run committed here (`npm run
// test:times` refreshes it), so that it too starts the slowest files first.
const COMMITTED_TIMES = join(root, 'test', 'times.json')
const readTimes = (path) => {
  try {
    // Each file's wall time and CPU time in ms (an older record holds the wall time alone).
    return Object.fromEntries(Object.entries(JSON.parse(readFileSync(path, 'utf8'))).map(([f, t]) => [f, typeof t === 'number' ? {ms: t} : t]))
  } catch {
    return undefined
  }
}
const lastTimes = readTimes(TIMES) ?? readTimes(COMMITTED_TIMES) ?? {}
const wallOf = (file) => lastTimes[relative(root, file)]?.ms ?? Infinity
const files = find(join(root, 'test'))
  .filter((f) => filter.length === 0 || filter.some((x) => f.includes(x)))
  .sort((a, b) => wallOf(b) - wallOf(a) || (a < b ? -1 : 1))
const strip = (s) => s.replace(/\x1b\[[0-9;]*m/g, '')
const FILE_TIMEOUT_MS = 240_000
/** Test files that compute at once: the machines the suite runs on have two cores. */
const CORES = 2
/** Below this share of its wall time on a CPU, a file mostly waits (see load). */
const WAITING_SHARE = 0.5
/** CPU is sampled this often, so only a file running some seconds is judged (a shorter one counts as computing). */
const CPU_SAMPLE_MS = 500
const MIN_WAITING_MS = 3000

// The caller's shell may configure mod (MOD_MODEL_DIR, MOD_API_KEYS, ...): the tests must not see it. Every
// process started here (the build, the warm-cache scan, each test file and what it starts in turn) runs with
// onnxruntime's usage telemetry off, as bin/run.js runs mod: otherwise an engine opened outside the CLI (in a test
// file, in the warm-cache scan) writes a device id and queued events under HOME.
const baseEnv = {...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MOD_'))), ORT_DISABLE_TELEMETRY: '1'}
const SLOWEST_SHOWN = 10
const started = Date.now()
// Folders of this run alone (removed at its end), so that two runs in one checkout do not pull them from each other.
const MIRROR = join(root, 'test', 'fixtures', 'tmp', `js-${process.pid}`)
const WARM_CACHE = join(root, 'test', 'fixtures', 'tmp', `warm-cache-${process.pid}`)
const removeRunFolders = () => {
  for (const dir of [MIRROR, WARM_CACHE]) rmSync(dir, {recursive: true, force: true})
}
process.on('exit', removeRunFolders)
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => process.exit(1))
try {
  await transpile(root, MIRROR)
} catch (e) {
  process.stdout.write(`${e.message}\n\n0 passed, 1 failed\n`)
  process.exit(1)
}

/** Runs a process to its end; its output is kept for a failure's report. */
function finished(cmd, args, opts) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, {cwd: root, ...opts, stdio: ['ignore', 'pipe', 'pipe']})
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (out += d))
    child.on('close', (code) => resolve({code, out}))
  })
}

// The build (dist, which CLI processes and in-process commands run) starts now and goes on beside the test files
// that need none: engine tests under test/lib that start no CLI.
let built = !building
const build = building
  ? finished('npm', ['run', '--silent', 'build'], {env: baseEnv}).then((r) => {
      if (r.code !== 0) {
        process.stdout.write(`${r.out}\nnpm run build failed\n\n0 passed, 1 failed\n`)
        process.exit(1)
      }
      built = true
    })
  : undefined
const NEEDS_BUILD = /run\.js|runInProcess|runCli|cliEnv|\bBIN\b|dist|bin\/|server\/harness|conformance|python-tools/
const needing = new Map()
const needsBuild = (file) => {
  if (!needing.has(file)) needing.set(file, !relative(root, file).startsWith(`test${sep}lib${sep}`) || NEEDS_BUILD.test(readFileSync(file, 'utf8')))
  return needing.get(file)
}

// The optimised graphs of the models every scan opens and the toy model's embeddings of the default prompts and
// of "red" (the redness category most tests add), built once by a real scan for test/helpers/warm-cache.ts
// (test/warm-cache-build.ts, from the copy: it needs no build).
mkdirSync(WARM_CACHE, {recursive: true})
writeFileSync(join(WARM_CACHE, 'policy.yaml'), 'categories:\n  redness:\n    prompts: ["red"]\n    threshold: 0.5\n')
const warm = await finished(
  process.execPath,
  [mirrorOf(root, MIRROR, join(root, 'test', 'warm-cache-build.ts')), WARM_CACHE, join(WARM_CACHE, 'policy.yaml'), join(root, 'test', 'fixtures', 'photos'), join(root, 'test', 'fixtures', 'models', 'toy')],
  {env: baseEnv},
)
// Without it the tests still pass, each building what it needs: say so, and go on.
if (warm.code !== 0) process.stdout.write(`the warm cache was not built:\n${warm.out}\n`)

/**
 * CPU time so far of each running test file's process and everything it started, in ms, from one read of /proc
 * (Linux; nothing elsewhere): its own, its children's it has waited for, and those of its descendants still
 * running (a server the test has not stopped yet), so that a file whose work happens in the processes it starts
 * counts as computing. Sampled every CPU_SAMPLE_MS while files run, keeping each file's largest figure.
 */
const cpuSoFar = new Map()
function sampleCpu() {
  const stats = new Map()
  let names = []
  try {
    names = readdirSync('/proc').filter((n) => /^\d+$/.test(n))
  } catch {
    return
  }
  for (const name of names) {
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      // ppid, then utime, stime, cutime, cstime: fields 4 and 14-17 of stat(5), in clock ticks of 10 ms.
      stats.set(Number(name), {ppid: Number(fields[1]), ticks: [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0)})
    } catch {
      // Gone since the listing.
    }
  }
  const children = new Map()
  for (const [p, {ppid}] of stats) children.set(ppid, [...(children.get(ppid) ?? []), p])
  for (const [pid, before] of cpuSoFar) {
    let ticks = 0
    const todo = [pid]
    while (todo.length > 0) {
      const p = todo.pop()
      ticks += stats.get(p)?.ticks ?? 0
      todo.push(...(children.get(p) ?? []))
    }
    cpuSoFar.set(pid, Math.max(before, ticks * 10))
  }
}
const sampler = setInterval(() => cpuSoFar.size > 0 && sampleCpu(), CPU_SAMPLE_MS)

function runFile(file) {
  return new Promise((resolve) => {
    const started = Date.now()
    const child = spawn(process.execPath, ['--enable-source-maps', mirrorOf(root, MIRROR, file)], {
      cwd: root,
      env: {...baseEnv, NO_COLOR: '1', FORCE_COLOR: '0', TEST_WARM_CACHE: WARM_CACHE},
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    cpuSoFar.set(child.pid, 0)
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (out += d))
    const timer = setTimeout(() => {
      out += `\n[run] ${relative(root, file)} timed out after ${FILE_TIMEOUT_MS} ms\n`
      child.kill('SIGKILL')
    }, FILE_TIMEOUT_MS)
    child.on('close', (code) => {
      clearTimeout(timer)
      const cpu = cpuSoFar.get(child.pid) ?? 0
      cpuSoFar.delete(child.pid)
      const text = strip(out)
      const total = Number(/Total:\s+(\d+)/.exec(text)?.[1] ?? 0)
      const passed = Number(/Passed:\s+(\d+)/.exec(text)?.[1] ?? 0)
      const skipped = Number(/Skipped:\s+(\d+)/.exec(text)?.[1] ?? 0)
      let failed = total - passed - skipped
      if (code !== 0 && failed === 0) failed = 1
      resolve({file, text, passed, failed, skipped, ms: Date.now() - started, cpu})
    })
  })
}

const queue = [...files]
let passed = 0
let failed = 0
let skipped = 0
const failures = []
const times = []
/**
 * What a file takes of the two cores while it runs: a file that mostly waits (timeouts, slow clients, a browser;
 * under WAITING_SHARE of its last run's wall time on a CPU) counts as half, so one runs beside two that compute.
 */
function load(file) {
  const last = lastTimes[relative(root, file)]
  return last?.cpu !== undefined && last.ms >= MIN_WAITING_MS && last.cpu < WAITING_SHARE * last.ms ? 0.5 : 1
}
await new Promise((done) => {
  // The build takes a core while it runs.
  let used = built ? 0 : 1
  let running = 0
  build?.then(() => {
    used -= 1
    startFitting()
  })
  const startFitting = () => {
    while (queue.length > 0) {
      // The slowest file first; when it does not fit beside those running, the slowest one that does.
      const i = queue.findIndex((f) => used + load(f) <= CORES && (built || !needsBuild(f)))
      if (i === -1) break
      const [file] = queue.splice(i, 1)
      const cost = load(file)
      used += cost
      running++
      runFile(file).then((r) => {
        used -= cost
        running--
        const secs = (r.ms / 1000).toFixed(1)
        process.stdout.write(`\n=== ${relative(root, file)} (${r.passed} passed, ${r.failed} failed, ${secs} s)\n${r.text.trimEnd()}\n`)
        times.push({file: relative(root, file), ms: r.ms, cpu: r.cpu})
        passed += r.passed
        failed += r.failed
        skipped += r.skipped
        if (r.failed > 0) failures.push(relative(root, file))
        startFitting()
      })
    }
    if (running === 0 && queue.length === 0) {
      clearInterval(sampler)
      done()
    }
  }
  startFitting()
})
const secs = ((Date.now() - started) / 1000).toFixed(1)
mkdirSync(join(root, 'test', 'fixtures', 'tmp'), {recursive: true})
writeFileSync(TIMES, `${JSON.stringify({...lastTimes, ...Object.fromEntries(times.map((t) => [t.file, {ms: t.ms, cpu: t.cpu}]))}, null, 1)}\n`)
if (times.length > 1) {
  const slowest = times.sort((a, b) => b.ms - a.ms).slice(0, SLOWEST_SHOWN)
  process.stdout.write(`\nslowest files:\n${slowest.map((t) => `${(t.ms / 1000).toFixed(1).padStart(7)} s  ${t.file}`).join('\n')}\n`)
}
if (failures.length > 0) process.stdout.write(`\nfailing files: ${failures.join(', ')}\n`)
process.stdout.write(`\n${files.length} test files in ${secs} s\n`)
process.stdout.write(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}\n`)
process.exit(failed > 0 || files.length === 0 ? 1 : 0)

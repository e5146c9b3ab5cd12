#!/usr/bin/env node
// The test runner. `node test/run.mjs [substring...]` runs every test/**/*.test.ts (or those whose path contains one
// of the substrings), JOBS at a time in path order, and ends with the line "N passed, N failed, N skipped". It runs
// on dist/ as it is: `npm test` builds first. Each of the JOBS lines of files runs in one process that runs its
// files one after another (test/run-host.mjs: the modules they share load once), put back as new before each.
//
// Before the files it does two things that save real time (both in folders of this run alone, removed at its end):
// - a JavaScript copy of the TypeScript (esbuild, no type checks), so that each file starts as plain node instead of
//   going through tsx's loader on every import; import.meta.url keeps naming the .ts file, so paths a test builds
//   from its own place stay in the repository, and test/helpers/ts-script.ts starts a test's children from the copy;
//   src/lib/typebox.js there is TypeBox bundled into one module, as the build makes it in dist/;
// - a warm model cache, built by one real scan (test/warm-cache-build.ts), which test/helpers/warm-cache.ts links
//   into a test's fresh MOD_CACHE_DIR, so that tests about something else do not build the same graphs again.
//
// A test that needs what this machine lacks is skipped with a line "[skip] <test>: <reason>" (test/helpers/skip.ts);
// they are listed at the end. With --no-skips (.ci/run, which installs every tool) a skipped test fails the run.
import {spawn} from 'node:child_process'
import {mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statfsSync, statSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {dirname, join, relative} from 'node:path'
import {fileURLToPath, pathToFileURL} from 'node:url'
import {transform} from 'esbuild'

import {bundleTypebox} from '../scripts/bundle-typebox.mjs'

/** Files run at once. The suite's machines have 2 cores, and many files spend much of their time waiting. */
const JOBS = Number(process.env.TEST_JOBS) || 3
/** A file still running after this long is killed and counts as failed. */
const FILE_TIMEOUT_MS = 240_000

const root = fileURLToPath(new URL('..', import.meta.url))
const noSkips = process.argv.includes('--no-skips')
const filters = process.argv.slice(2).filter((a) => a !== '--no-skips')
const tmp = join(root, 'test', 'fixtures', 'tmp')
const copyDir = join(tmp, `js-${process.pid}`)
// The tests' temporary folders: each test file gets its own TMPDIR under this one, so that what it leaves (or mod's
// defaults there, such as a server's job storage with its sweep of old job folders) stays in that file's run. It
// never meets the user's own files in the system's temporary folder, nor another file's: a server started there
// would otherwise sweep, and log, the job folder of one that another file killed. In memory when the machine has a
// tmpfs at /dev/shm with room: the suite creates and deletes tens of thousands of files, and on ext4 without a
// journal creating one after thousands of deletions scans the recently freed inodes (installing the packed tarball,
// 449 MB, took about 5 CPU-s more there, 2026-11-30; the whole run about 1% of its CPU in ext4's inode search).
const runTmp = mkdtempSync(join(roomyTmpfs('/dev/shm') ? '/dev/shm' : tmpdir(), 'mod-test-'))
// Beside the tests' folders, on the same file system: they hard-link its files (test/helpers/warm-cache.ts).
const warmCache = join(runTmp, 'warm-cache')
// Node.js 22 and later keep the code they compiled here, so that the hundreds of processes the tests start (mod
// itself, each time) do not compile the same modules again; older releases ignore it.
const compileCache = join(tmp, `compile-cache-${process.pid}`)
// The processes started here, with all they started: killed with them (killTree) on every way out.
const children = new Set()
process.on('exit', () => {
  for (const child of children) killTree(child)
  for (const dir of [copyDir, runTmp, compileCache]) rmSync(dir, {recursive: true, force: true})
})
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => process.exit(1))

// The caller's MOD_* variables (their models, keys, ports) must not reach the tests: each sets what it needs. Nor
// its proxy variables, which mod and npm obey: a test's requests to 127.0.0.1 would go to the shell's proxy.
// onnxruntime's usage telemetry is off in everything started here, as bin/run.js turns it off for mod.
const PROXY = /^(https?|no|all)_proxy$|^npm_config_(https_)?proxy$/i
const env = {...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MOD_') && !PROXY.test(k))), ORT_DISABLE_TELEMETRY: '1', NODE_COMPILE_CACHE: compileCache}

/** Whether `dir` is a tmpfs with at least 2 GiB free. */
function roomyTmpfs(dir) {
  try {
    const fs = statfsSync(dir)
    return fs.type === 0x01021994 && fs.bavail * fs.bsize >= 2 ** 31
  } catch {
    return false
  }
}

/**
 * Kills `child` and every process below it. Killing the child alone left what its tests had started (a server, a
 * redis-server, a chromium) running for good when a file timed out or the run was stopped: orphans whose parent is
 * gone cannot be found after, so the tree is read from /proc first (where there is none, the child alone is killed).
 */
function killTree(child) {
  children.delete(child)
  if (child.exitCode !== null || child.signalCode !== null) return
  const below = new Map()
  try {
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue
      try {
        const stat = readFileSync(`/proc/${name}/stat`, 'latin1')
        // The command name is in parentheses and may hold spaces and parentheses itself: the fields follow the last.
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
        below.set(ppid, [...(below.get(ppid) ?? []), Number(name)])
      } catch {
        // gone since the listing
      }
    }
  } catch {
    // no /proc
  }
  const tree = [child.pid]
  for (let i = 0; i < tree.length; i++) tree.push(...(below.get(tree[i]) ?? []))
  for (const pid of tree) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // already gone
    }
  }
}

const walk = (dir, keep, skip = new Set()) =>
  readdirSync(dir).sort().flatMap((name) => {
    const p = join(dir, name)
    if (skip.has(relative(root, p)) || name === 'node_modules') return []
    return statSync(p).isDirectory() ? walk(p, keep, skip) : keep(name) ? [p] : []
  })
const copyOf = (file) => join(copyDir, relative(root, file)).replace(/\.ts$/, '.js')

async function writeCopy() {
  const generated = new Set(['test/fixtures', 'bench/out', 'bench/models', 'bench/.venv'])
  const sources = ['src', 'test', 'scripts', 'bench'].flatMap((d) => walk(join(root, d), (n) => n.endsWith('.ts') && !n.endsWith('.d.ts'), generated))
  await Promise.all(sources.map(async (file) => {
    const {code} = await transform(readFileSync(file, 'utf8'), {
      loader: 'ts',
      format: 'esm',
      target: 'node22',
      sourcemap: 'inline',
      sourcefile: file,
      define: {
        'import.meta.url': JSON.stringify(pathToFileURL(file).href),
        'import.meta.dirname': JSON.stringify(dirname(file)),
        'import.meta.filename': JSON.stringify(file),
      },
    })
    mkdirSync(dirname(copyOf(file)), {recursive: true})
    writeFileSync(copyOf(file), code)
  }))
  // Loading TypeBox's 374 modules cost each test process about 0.06 CPU-s more on Node 20.
  await bundleTypebox(copyOf(join(root, 'src', 'lib', 'typebox.ts')))
}

/** Runs node on `args` to its end (killed after FILE_TIMEOUT_MS); resolves with its exit code and output. */
function run(args, extraEnv = {}) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, {cwd: root, env: {...env, ...extraEnv}, stdio: ['ignore', 'pipe', 'pipe']})
    children.add(child)
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (out += d))
    const timer = setTimeout(() => {
      out += `\n[run] timed out after ${FILE_TIMEOUT_MS} ms\n`
      killTree(child)
    }, FILE_TIMEOUT_MS)
    child.on('close', (code) => {
      clearTimeout(timer)
      children.delete(child)
      resolve({code, out: out.replace(/\x1b\[[0-9;]*m/g, '')})
    })
  })
}

const files = walk(join(root, 'test'), (n) => n.endsWith('.test.ts'), new Set(['test/fixtures'])).filter(
  (f) => filters.length === 0 || filters.some((s) => f.includes(s)),
)
const started = Date.now()
if (!statSync(join(root, 'dist'), {throwIfNoEntry: false})) process.stdout.write('dist/ is missing: the tests that start mod fail until `npm run build`\n')
try {
  await writeCopy()
} catch (e) {
  process.stdout.write(`${e.message}\n\n0 passed, 1 failed, 0 skipped\n`)
  process.exit(1)
}
mkdirSync(warmCache, {recursive: true})
writeFileSync(join(warmCache, 'policy.yaml'), 'categories:\n  redness:\n    prompts: ["red"]\n    threshold: 0.5\n')
const fixtures = join(root, 'test', 'fixtures')
const warm = await run([copyOf(join(root, 'test', 'warm-cache-build.ts')), warmCache, join(warmCache, 'policy.yaml'), join(fixtures, 'photos'), join(fixtures, 'models', 'toy')], {TMPDIR: runTmp})
// Without it the tests still pass, each building what it needs.
if (warm.code !== 0) process.stdout.write(`the warm cache was not built:\n${warm.out}\n`)

const totals = {passed: 0, failed: 0, skipped: 0}
const failing = []
const skips = []
const times = []
const leftovers = []
// Files run in host processes (test/run-host.mjs), one after another, each host running one file at a time. A host
// that dies or runs a file past FILE_TIMEOUT_MS fails that file and is replaced for the next.
const MARK = '\u0000mod-test-file-end\u0000'
// Files whose assertions are about the process itself run in a host of their own: which modules are loaded, and
// libvips's operation cache, on by default (mod hash turns it off for its whole process).
const OWN_PROCESS = new Set(['test/server/jobs-loading.test.ts', 'test/lib/image/decode.test.ts'])

// V8 starts a process's old generation small and collects it whenever it reaches its limit; a process running 80 or
// so files one after another reached it about every second, and marking its whole heap again each time took V8's
// background threads about 35 CPU-s of a run (measured with perf and each thread's CPU, 2026-11-30). Starting it at
// 1 GB leaves about 23: the files' garbage is collected less often, for no more resident memory than before.
const HOST_FLAGS = ['--enable-source-maps', '--initial-old-space-size=1024']
// glibc serves an allocation of 128 KiB or more from a mapping of its own, returned to the system when freed, until
// such a block is freed: it then raises that threshold (up to 32 MiB) and carves later large buffers (decoded images,
// onnxruntime's tensors) from its heaps, which a host running file after file fragments. A fixed threshold kept the
// hosts at about 0.8 GB resident instead of 1.3, so each `fork` of a test's child copies less: 331 CPU-s a run on
// average against 342, five runs of each in turns (2026-11-30; any one pair is within the machine's noise). For the
// hosts alone: what the tests start (mod itself) gets the caller's settings (run-host.mjs removes it from the files'
// environment).
const HOST_MALLOC = process.env.MALLOC_MMAP_THRESHOLD_ === undefined ? {MALLOC_MMAP_THRESHOLD_: '131072', TEST_HOST_MALLOC: '1'} : {}

function startHost() {
  const child = spawn(process.execPath, [...HOST_FLAGS, join(root, 'test', 'run-host.mjs')], {
    cwd: root,
    env: {...env, ...HOST_MALLOC, NO_COLOR: '1', FORCE_COLOR: '0', TEST_WARM_CACHE: warmCache},
    stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
  })
  children.add(child)
  const host = {child, out: '', err: '', exited: undefined, onChange: () => {}, ran: []}
  child.stdout.on('data', (d) => ((host.out += d), host.onChange()))
  child.stderr.on('data', (d) => ((host.err += d), host.onChange()))
  child.on('close', (code, signal) => (children.delete(child), (host.exited = signal ?? code), host.onChange()))
  // A host killed at the end of the run, or already gone, must not fail the runner with EPIPE.
  child.stdio[3].on('error', () => {})
  return host
}

/**
 * Runs one file in `host`; resolves with its exit code (0 or 1) and output, whether the host is gone, and the CPU
 * time the file used (NaN when the host died or cannot tell).
 */
function runInHost(host, file, extraEnv) {
  return new Promise((resolve) => {
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      killTree(host.child)
    }, FILE_TIMEOUT_MS)
    const finish = (result) => {
      clearTimeout(timer)
      host.onChange = () => {}
      resolve({...result, out: result.out.replace(/\x1b\[[0-9;]*m/g, '')})
    }
    host.onChange = () => {
      const o = host.out.indexOf(MARK)
      const e = host.err.indexOf(MARK)
      if (o >= 0 && e >= 0 && host.out.indexOf('\n', o) >= 0) {
        const [status, cpuMs] = host.out.slice(o + MARK.length, host.out.indexOf('\n', o)).split(' ')
        const out = host.out.slice(0, o) + host.err.slice(0, e)
        host.out = host.out.slice(host.out.indexOf('\n', o) + 1)
        host.err = host.err.slice(host.err.indexOf('\n', e) + 1)
        finish({code: status === '1' ? 1 : 0, out, dead: false, cpuMs: Number(cpuMs)})
      } else if (host.exited !== undefined) {
        const why = timedOut ? `timed out after ${FILE_TIMEOUT_MS} ms` : `the process running this file exited (${host.exited})`
        finish({code: 1, out: `${host.out}${host.err}\n[run] ${why}\n`, dead: true, cpuMs: Number.NaN})
      }
    }
    host.child.stdio[3].write(`${JSON.stringify({file: copyOf(file), env: extraEnv})}\n`)
  })
}

const stopHost = (host) => killTree(host.child)

async function runFiles(queue) {
  let host
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
    const name = relative(root, file)
    const t0 = Date.now()
    const fileTmp = mkdtempSync(join(runTmp, 'file-'))
    const own = OWN_PROCESS.has(name)
    const runner = own ? startHost() : (host ??= startHost())
    const {code, out, dead, cpuMs} = await runInHost(runner, file, {TMPDIR: fileTmp, TEST_FILE: name})
    // A failure that depends on what ran before in the same process shows with that list.
    const before = runner.ran.length > 0 ? `\n[run.mjs] this file ran in a process that had run: ${runner.ran.join(', ')}` : ''
    runner.ran.push(name)
    if (own) stopHost(runner)
    else if (dead) host = undefined
    // What a test left there would have stayed in the user's temporary folder: named, then removed.
    const left = readdirSync(fileTmp)
    if (left.length > 0) leftovers.push(`${name}: ${left.join(', ')}`)
    rmSync(fileTmp, {recursive: true, force: true})
    // uvu's summary closes the output; a test may print lines like it before.
    const count = (label) => Number([...out.matchAll(new RegExp(`^ +${label}: +(\\d+)$`, 'gm'))].at(-1)?.[1] ?? 0)
    // uvu's Total leaves skipped tests out. A file that exits non-zero with no failed test (a crash) counts as one,
    // and so does one without uvu's summary: its tests never ran (no test.run() after them), which passed unseen.
    const summary = /^ +Total: +\d+$/m.test(out)
    const passed = count('Passed')
    const failed = Math.max(count('Total') - passed, code === 0 && summary ? 0 : 1)
    const skipped = count('Skipped')
    const secs = ((Date.now() - t0) / 1000).toFixed(1)
    const cpu = Number.isNaN(cpuMs) ? '' : `, ${(cpuMs / 1000).toFixed(1)} CPU-s`
    // uvu stops a file's run without a word when an error's `details` is not text (a library's error may carry an
    // object there; a ModError's facts are in `context` for this reason): the tests after it are counted as failed,
    // and the cause is told here.
    const unsaid = failed > 0 && code === 0 && !/^\s+FAIL\s/m.test(out)
    const why = !summary
      ? '\n[run.mjs] no uvu summary: the file ran no test (is test.run() called after its tests?)'
      : unsaid
        ? `\n[run.mjs] ${failed} tests failed unreported: uvu stops a file when a test throws an error whose details property is not text; the test after the last one passed threw it`
        : ''
    process.stdout.write(`\n=== ${name} (${passed} passed, ${failed} failed, ${skipped} skipped, ${secs} s${cpu})\n${out.trimEnd()}${why}${failed > 0 ? before : ''}\n`)
    totals.passed += passed
    totals.failed += failed
    totals.skipped += skipped
    if (failed > 0) failing.push(name)
    skips.push(...out.match(/^\[skip\] .*/gm)?.map((line) => `${name}: ${line.slice('[skip] '.length)}`) ?? [])
    times.push({ms: Date.now() - t0, cpuMs, name})
  }
  if (host) stopHost(host)
}
// The files that take longest (10 to 35 s, much of it waiting on a server, a browser, a terminal or npm) start first, so that
// the short ones fill the time they wait and none of them ends the run alone.
const LONGEST = ['test/server/docs-page.test.ts', 'test/package.test.ts', 'test/commands/terminal.test.ts', 'test/commands/models-pull.test.ts', 'test/server/slow-attack.test.ts', 'test/commands/scan-server.test.ts', 'test/lib/video/frames.test.ts', 'test/commands/scan-video.test.ts', 'test/ci-pre-commit.test.ts', 'test/privacy.test.ts', 'test/ci-action.test.ts']
const rank = (file) => {
  const i = LONGEST.indexOf(relative(root, file))
  return i < 0 ? LONGEST.length : i
}
const queue = [...files].sort((a, b) => rank(a) - rank(b))
await Promise.all(Array.from({length: JOBS}, () => runFiles(queue)))

const top = (key) => [...times].sort((a, b) => (b[key] || 0) - (a[key] || 0)).slice(0, 10).map((t) => `${(t[key] / 1000).toFixed(1).padStart(7)} s  ${t.name}`).join('\n')
process.stdout.write(`\nslowest files:\n${top('ms')}\n`)
// On two cores the suite's length is mostly its CPU time: the files that use most are where cutting it pays.
const cpuTotal = times.reduce((sum, t) => sum + (Number.isNaN(t.cpuMs) ? 0 : t.cpuMs), 0)
process.stdout.write(`\nfiles using most CPU (${(cpuTotal / 1000).toFixed(0)} CPU-s in all, with what they started):\n${top('cpuMs')}\n`)
if (leftovers.length > 0) process.stdout.write(`\nleft in the tests' TMPDIR (removed):\n${leftovers.join('\n')}\n`)
if (skips.length > 0) process.stdout.write(`\nskipped tests:\n${skips.map((s) => `  ${s}`).join('\n')}\n`)
if (failing.length > 0) process.stdout.write(`\nfailing files: ${failing.join(', ')}\n`)
if (noSkips && totals.skipped > 0) process.stdout.write(`\n--no-skips: ${totals.skipped} skipped tests fail this run\n`)
process.stdout.write(`\n${files.length} test files in ${((Date.now() - started) / 1000).toFixed(1)} s\n`)
process.stdout.write(`${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped\n`)
process.exit(totals.failed > 0 || files.length === 0 || (noSkips && totals.skipped > 0) ? 1 : 0)

// A process of test/run.mjs that runs test files one after another, so that the modules they share (the engine,
// sharp, onnxruntime, the server, oclif) load once instead of once per file: about a tenth of the suite's CPU.
// It reads one JSON line per file on fd 3 ({file, env}) and, when the file's tests are done, writes a line
// MARK + "0" (passed) or MARK + "1" (failed), a space and the CPU milliseconds the file used, on stdout and MARK on
// stderr, so that the runner can cut each stream at the same place (pipes are written synchronously on Linux, so
// nothing the file wrote comes after its mark).
//
// Before each file the process is put back as a new one would be: the runner's environment plus the file's own
// (its TMPDIR), the repository as the working folder, the same umask, the file as process.argv[1], no exit code,
// uvu's queue empty; listeners the file left on the process are removed after it. A file whose assertions are
// about the process itself (which modules are loaded, libvips's settings) runs in a process of its own: OWN_PROCESS
// in run.mjs.
import {createReadStream, readFileSync, writeSync} from 'node:fs'
import {createInterface} from 'node:readline'
import {pathToFileURL} from 'node:url'

// uvu runs the suites a file queues only when exec() is called, and not at the end of the file's module.
globalThis.UVU_DEFER = 1
const {exec, test} = await import('uvu')

const MARK = '\u0000mod-test-file-end\u0000'
// The runner's malloc setting is for this process (glibc read it at its start), not for the processes tests start.
if (process.env.TEST_HOST_MALLOC) {
  delete process.env.MALLOC_MMAP_THRESHOLD_
  delete process.env.TEST_HOST_MALLOC
}
const baseEnv = {...process.env}
const root = process.cwd()
const umask = process.umask()
const EVENTS = ['exit', 'beforeExit', 'SIGINT', 'SIGTERM', 'SIGHUP', 'SIGPIPE', 'uncaughtException', 'unhandledRejection', 'warning']
const listeners = new Map(EVENTS.map((e) => [e, process.listeners(e)]))

/**
 * CPU milliseconds this process and the children it has waited for have used (/proc/self/stat: utime, stime,
 * cutime, cstime, in USER_HZ ticks, 100 a second on Linux), or NaN without /proc. A child's grandchildren count once
 * the child waited for them; a process left running when its file ended counts nowhere.
 */
function cpuMs() {
  try {
    const stat = readFileSync('/proc/self/stat', 'latin1')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return fields.slice(11, 15).reduce((sum, ticks) => sum + Number(ticks), 0) * 10
  } catch {
    return Number.NaN
  }
}

/**
 * Runs the tests a file declared on uvu's `test` after calling test.run(), which a process of its own never runs
 * (they would pass unseen) and this one would run with the next file's; returns how many there were.
 */
async function lateTests() {
  globalThis.UVU_QUEUE = [[null]]
  test.run()
  const [[, late]] = globalThis.UVU_QUEUE
  // uvu prints a line for every suite it runs, "(0 / 0)" for none: kept only when there were tests.
  const write = process.stdout.write
  let printed = ''
  process.stdout.write = (chunk) => ((printed += chunk), true)
  let errors, total
  try {
    ;[errors, , , total] = await late()
  } finally {
    process.stdout.write = write
  }
  if (total > 0) {
    const failures = errors === true ? '' : `\n${errors}`
    process.stdout.write(`${printed}${failures}\n[run-host] ${total} tests declared after test.run(): a file's own process never runs them\n`)
  }
  return total
}

for await (const line of createInterface({input: createReadStream(null, {fd: 3})})) {
  const {file, env} = JSON.parse(line)
  for (const k of Object.keys(process.env)) if (!(k in baseEnv)) delete process.env[k]
  Object.assign(process.env, baseEnv, env)
  process.chdir(root)
  process.umask(umask)
  process.exitCode = undefined
  globalThis.UVU_QUEUE = [[null]]
  // As in a process started on the file: test/helpers/ts-script.ts tells from it that children run the JS copy.
  process.argv[1] = file
  let failed
  const cpu0 = cpuMs()
  try {
    await import(pathToFileURL(file).href)
    await exec()
    failed = Boolean(process.exitCode) || (await lateTests()) > 0
  } catch (e) {
    // A file that throws while it loads: its tests never ran, and the runner finds no uvu summary.
    process.stdout.write(`\n${e instanceof Error ? e.stack : String(e)}\n`)
    failed = true
  }
  process.exitCode = undefined
  for (const e of EVENTS) {
    const before = listeners.get(e)
    for (const l of process.listeners(e)) if (!before.includes(l)) process.off(e, l)
  }
  writeSync(1, `\n${MARK}${failed ? 1 : 0} ${cpuMs() - cpu0}\n`)
  writeSync(2, `\n${MARK}\n`)
}
process.exit(0)

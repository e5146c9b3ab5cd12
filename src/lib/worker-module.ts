import {existsSync} from 'node:fs'
import {fileURLToPath} from 'node:url'
import {Worker, type WorkerOptions} from 'node:worker_threads'

/**
 * A worker thread running a module that sits beside its caller: `compiled`, the .js, wherever there is one (dist,
 * and the test runner's JavaScript copy, which the caller finds through import.meta.resolve, as its import.meta.url
 * may name the source), else `source`, the .ts, through tsx's loader, which the thread registers before importing it
 * (run from the sources).
 */
export function startModuleWorker(compiled: URL, source: URL, options: WorkerOptions = {}): Worker {
  if (compiled.pathname.endsWith('.js') && existsSync(fileURLToPath(compiled))) return new Worker(compiled, options)
  const tsx = import.meta.resolve('tsx/esm/api')
  const code = `import(${JSON.stringify(tsx)}).then((t) => t.register()).then(() => import(${JSON.stringify(source.href)}))`
  return new Worker(code, {...options, eval: true})
}

/** Why a thread stopped: its error, or a sentence naming `what` and its exit code. */
export function threadStopped(what: string, e: unknown): Error {
  return e instanceof Error ? e : new Error(`${what} stopped (exit code ${String(e)})`)
}

/**
 * The threads that must not be cut off in the middle of a task, each with how to stop it between two: a thread ended
 * while native code runs in it (process.exit ends every thread at once) can abort the whole process. Kept by the
 * module that starts such a thread, while it runs.
 */
const betweenTasks = new Set<() => Promise<void>>()

/** Registers how to stop a thread between two of its tasks; the returned function unregisters it. */
export function stopBetweenTasks(stop: () => Promise<void>): () => void {
  betweenTasks.add(stop)
  return () => void betweenTasks.delete(stop)
}

/**
 * Stops every registered thread between two of its tasks, before a process leaves in the middle of work (a stop
 * signal, an error): at most `timeoutMs`, after which the process may leave anyway.
 */
export async function stopThreadsBeforeExit(timeoutMs = 5000): Promise<void> {
  if (betweenTasks.size === 0) return
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs).unref()))
  await Promise.race([Promise.all([...betweenTasks].map((stop) => stop())), late])
  clearTimeout(timer)
}

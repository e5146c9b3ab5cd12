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

import {constants} from 'node:os'

/** True while a process with this id runs on this host (as any user: EPERM means it exists). */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/**
 * Ends the process of `signal` itself, as a shell then reports it (128 + its number), without the teardown an exit
 * runs: an exit while onnxruntime opens or runs a model in the inference thread aborts the process (`terminate
 * called after throwing an instance of 'Napi::Error'`, exit 134), and one with a terminal that closed asserts on
 * Node.js 20 (nodejs/node#51519). Output written so far is out already (writes to files, pipes and terminals are
 * synchronous on Linux and macOS). The timer is for a signal that did not end it.
 */
export function endBySignal(signal: 'SIGINT' | 'SIGTERM' | 'SIGHUP'): Promise<never> {
  process.removeAllListeners(signal)
  setTimeout(() => process.exit(128 + constants.signals[signal]), 1000).unref()
  process.kill(process.pid, signal)
  return new Promise(() => {})
}

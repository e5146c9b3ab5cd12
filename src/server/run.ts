import type {Server} from 'node:http'

import type {Settings} from '../lib/config/settings.js'
import type {Engine} from '../lib/engine.js'
import {buildServer} from './app.js'
import {describe, type Log} from './errors.js'

export interface RunOptions {
  engine: Engine
  settings: Settings
  host: string
  port: number
  log: Log
  /** Called once the port is open, with the port actually bound (useful with port 0). */
  onListening: (port: number) => void
  /** Settles when the server should stop: a signal, or the cluster primary asking. */
  stop: Promise<unknown>
}

/** Exit codes of `mod serve`: 0 after a graceful stop, 2 when it could not start (CONTRACTS §6). */
export const EXIT_OK = 0
export const EXIT_START_FAILED = 2

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => {
      server.off('error', reject)
      const address = server.address()
      resolve(typeof address === 'object' && address ? address.port : port)
    })
  })
}

/**
 * One serving process (the only one, or a cluster worker): with MOD_PRELOAD the model is loaded before
 * the port opens, so /health says model_loaded: true from its first answer; then it serves until `stop`
 * settles, lets requests in flight finish, releases the model and returns the exit code.
 */
export async function runServer(o: RunOptions): Promise<number> {
  let stopping = false
  void o.stop.then(() => (stopping = true))
  if (o.settings.preload) {
    try {
      await o.engine.load()
    } catch (e) {
      o.log(`error: the model could not be loaded: ${describe(e)}`)
      return EXIT_START_FAILED
    }
  }
  if (stopping) {
    await o.engine.close()
    return EXIT_OK
  }

  const handle = buildServer(o.engine, o.settings, {log: o.log})
  let port: number
  try {
    port = await listen(handle.server, o.port, o.host)
  } catch (e) {
    o.log(`error: cannot listen on ${o.host}:${o.port}: ${describe(e)}`)
    await o.engine.close()
    return EXIT_START_FAILED
  }
  o.onListening(port)

  await o.stop
  const inFlight = handle.gate.admitted + handle.gate.receiving
  // close() stops accepting at once; the line is printed once new connections are already refused.
  const closed = handle.close()
  o.log(inFlight > 0 ? `stopping: finishing ${inFlight} request(s) in flight` : 'stopping')
  await closed
  await o.engine.close()
  return EXIT_OK
}

/**
 * Settles on the first SIGTERM or SIGINT; a second one exits at once with code 1 (an impatient
 * Ctrl-C, or an orchestrator that gave up waiting), after `beforeExit` (the primary kills its workers).
 */
export function stopSignals(log: Log, beforeExit: () => void = () => {}): Promise<string> {
  return new Promise((resolve) => {
    let received = false
    const onSignal = (signal: NodeJS.Signals) => {
      if (received) {
        log(`${signal} again: exiting without waiting`)
        beforeExit()
        process.exit(1)
      }
      received = true
      resolve(signal)
    }
    process.on('SIGTERM', onSignal)
    process.on('SIGINT', onSignal)
  })
}

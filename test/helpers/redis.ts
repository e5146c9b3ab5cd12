// A real redis-server for the job queue tests: on a free loopback port, in a temporary folder, stopped
// (and its folder removed) by the test.
import {spawn, type ChildProcess} from 'node:child_process'
import {mkdtempSync, rmSync} from 'node:fs'
import {createServer} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

export const REDIS_SERVER = process.env.REDIS_SERVER ?? 'redis-server'

export interface RedisServer {
  url: string
  port: number
  /** Stops the server (SIGTERM, or SIGKILL to lose what was not saved) and waits for its exit. */
  stop(signal?: NodeJS.Signals): Promise<void>
  /** Starts it again on the same port and folder (with appendonly, what was accepted is back). */
  restart(): Promise<void>
  /** Stops it and removes its folder. */
  remove(): Promise<void>
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const {port} = server.address() as {port: number}
      server.close(() => resolve(port))
    })
  })
}

/** Resolves once the server says it accepts connections. */
function launch(port: number, dir: string, appendonly: boolean): Promise<ChildProcess> {
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', appendonly ? 'yes' : 'no', '--appendfsync', 'always']
  const child = spawn(REDIS_SERVER, args, {stdio: ['ignore', 'pipe', 'pipe']})
  return new Promise((resolve, reject) => {
    let out = ''
    child.stdout?.setEncoding('utf8').on('data', (d: string) => {
      out += d
      if (out.includes('Ready to accept connections')) resolve(child)
    })
    child.once('error', reject)
    child.once('exit', (code) => reject(new Error(`redis-server exited (${code}): ${out}`)))
  })
}

export async function startRedis({appendonly = false} = {}): Promise<RedisServer> {
  const dir = mkdtempSync(join(tmpdir(), 'mod-redis-'))
  const port = await freePort()
  let child: ChildProcess | undefined = await launch(port, dir, appendonly)
  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    const running = child
    child = undefined
    if (!running || running.exitCode !== null) return
    const exited = new Promise((resolve) => running.once('exit', resolve))
    running.kill(signal)
    await exited
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    stop,
    async restart() {
      await stop()
      child = await launch(port, dir, appendonly)
    },
    async remove() {
      await stop('SIGKILL')
      rmSync(dir, {recursive: true, force: true})
    },
  }
}

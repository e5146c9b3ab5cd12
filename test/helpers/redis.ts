// A real redis-server for the job queue tests: on a free loopback port, in a temporary folder, stopped
// (and its folder removed) by the test.
import {spawn, type ChildProcess} from 'node:child_process'
import {mkdtempSync, rmSync} from 'node:fs'
import {createServer} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import type {Redis} from 'ioredis'

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

/** A server on a free port, or on `port` (one a test kept free for it, to start it after its clients). */
export async function startRedis({appendonly = false, port: chosen}: {appendonly?: boolean; port?: number} = {}): Promise<RedisServer> {
  const dir = mkdtempSync(join(tmpdir(), 'mod-redis-'))
  const port = chosen ?? (await freePort())
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

/**
 * Every key that names `id`, or holds an entry (member, field, value) that does. BullMQ's event stream is left out:
 * a log of every job's changes, capped at 10 000 entries, not a record of the job.
 */
export async function entriesNaming(client: Redis, id: string): Promise<string[]> {
  const found: string[] = []
  for (const key of await client.keys('*')) {
    if (key.includes(id)) {
      found.push(key)
      continue
    }
    const type = await client.type(key)
    const content =
      type === 'zset' ? await client.zrange(key, 0, -1)
      : type === 'list' ? await client.lrange(key, 0, -1)
      : type === 'set' ? await client.smembers(key)
      : type === 'hash' ? Object.entries(await client.hgetall(key)).flat()
      : type === 'string' ? [(await client.get(key)) ?? '']
      : []
    if (content.some((entry) => entry.includes(id))) found.push(`${key} (${type})`)
  }
  return found
}

/** Shared by the queue benches: child processes watched for a line, a Redis of their own, `mod serve` and `mod worker`. */
import {spawn, type ChildProcess} from 'node:child_process'
import {writeFileSync} from 'node:fs'
import {createServer} from 'node:net'
import {join} from 'node:path'

import {BIN, ROOT} from './lib.js'

export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const {port} = s.address() as {port: number}
      s.close(() => resolve(port))
    })
  })
}

export interface Launched {
  child: ChildProcess
  /** Resolves with the first match of `pattern` in the process's output so far or to come. */
  waitFor(pattern: RegExp): Promise<RegExpExecArray>
  kill(signal: NodeJS.Signals): Promise<void>
}

const launched: Launched[] = []
// A bench that fails half-way leaves no Redis, server or worker running.
process.on('exit', () => {
  for (const p of launched) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL')
})

export function launch(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Launched {
  const child = spawn(command, args, {cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe']})
  let out = ''
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()))
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const waitFor = async (pattern: RegExp): Promise<RegExpExecArray> => {
    for (;;) {
      const m = pattern.exec(out)
      if (m) return m
      if (child.exitCode !== null) throw new Error(`${command} exited:\n${out}`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
  const kill = async (signal: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal)
    await exited
  }
  const p = {child, waitFor, kill}
  launched.push(p)
  return p
}

/** Stops every process still running (SIGTERM), the last started first. */
export async function stopAll(): Promise<void> {
  for (const p of launched.reverse()) await p.kill('SIGTERM')
}

/** A redis-server in `dir` on `port`, persisting every write as the deploy files do (appendonly, fsync always). */
export async function startRedis(dir: string, port: number): Promise<Launched> {
  const r = launch('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'yes', '--appendfsync', 'always'])
  await r.waitFor(/Ready to accept connections/)
  return r
}

/** A clean MOD_* environment for `mod serve` / `mod worker` on `modelDir` with a redness policy, jobs on `redisUrl`. */
export function modEnv(dir: string, modelDir: string, redisUrl: string): NodeJS.ProcessEnv {
  const policy = join(dir, 'policy.yaml')
  writeFileSync(policy, 'categories:\n  redness:\n    prompts: ["red"]\n')
  return {
    ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MOD_'))),
    NO_COLOR: '1',
    MOD_MODEL_DIR: modelDir,
    MOD_CACHE_DIR: join(dir, 'cache'),
    MOD_CONFIG: policy,
    MOD_REDIS_URL: redisUrl,
    MOD_JOB_STORAGE: join(dir, 'jobs'),
    MOD_MAX_JOB_BYTES: '1GB',
  }
}

/** `mod serve` that only accepts jobs; resolves with its base URL. */
export async function acceptingServer(env: NodeJS.ProcessEnv): Promise<{base: string; server: Launched}> {
  const server = launch(process.execPath, [BIN, 'serve', '--port', '0'], {...env, MOD_SERVE_JOBS: 'false'})
  return {base: (await server.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/))[1], server}
}

/** `mod worker` processes, resolved once each takes jobs. */
export async function modWorkers(count: number, env: NodeJS.ProcessEnv): Promise<Launched[]> {
  const workers = Array.from({length: count}, () => launch(process.execPath, [BIN, 'worker'], env))
  await Promise.all(workers.map((w) => w.waitFor(/taking jobs from/)))
  return workers
}

// Shared by the server tests: settings and engines for the toy model, an in-process server on port 0,
// request helpers, and the OpenAPI conformance check every JSON answer goes through.
import {spawn, type ChildProcess} from 'node:child_process'
import {createHmac} from 'node:crypto'
import {createServer, request as httpRequest, type ClientRequest, type IncomingHttpHeaders, type ServerResponse} from 'node:http'
import type {AddressInfo} from 'node:net'

import {buildPolicy, loadPolicyFile} from '../../src/lib/config/policy.js'
import {DEFAULT_LIMITS, readSettings, type EngineSettings, type Limits, type ServerSettings} from '../../src/lib/config/settings.js'
import {createEngine, type Engine} from '../../src/lib/engine.js'
import {DIRECT} from '../../src/lib/pipeline/scheduler.js'
import type {ModerationResult} from '../../src/lib/types.js'
import {buildServer, type ModServer, type ServerOptions} from '../../src/server/app.js'
import {plainText} from '../../src/server/logger.js'
import {openapiDocument} from '../../src/server/openapi.js'
import {BIN as BIN_PATH, ROOT as ROOT_PATH, solidPng, TOY_MODEL} from '../helpers/cli.js'
import {assertConforms, createConformance} from './conformance.js'
import {signalStates, withoutSpecialist} from '../helpers/signals.js'

export {solidPng, tempDir, TOY_MODEL, writeRednessPolicy} from '../helpers/cli.js'
export {toyEngine} from '../helpers/toy-engine.js'

/** Both sections in one value: what the toy engine and the server of a test read. */
export type TestSettings = EngineSettings & ServerSettings

export type SettingsOverrides = Omit<Partial<TestSettings>, 'limits'> & {limits?: Partial<Limits>}

/** The defaults of a clean environment (as `mod serve` reads them), with `over` on top. */
export function testSettings(cacheDir: string, over: SettingsOverrides = {}): TestSettings {
  const {engine, server} = readSettings({cacheDir}, {})
  const defaults = {...engine, ...server}
  return {...defaults, ...over, limits: {...defaults.limits, ...over.limits}}
}

/** A model-less Engine whose methods a test replaces; by default every image is a safe result named after its source. */
export function fakeEngine(over: Partial<Engine> = {}): Engine {
  let loaded = false
  const result = (source: string): ModerationResult => ({source, is_safe: true, violations: [], labels: [], not_evaluated: []})
  const engine: Engine = {
    preset: 'fast',
    policy: buildPolicy(),
    isLoaded: () => loaded,
    signals: () => signalStates({clip: loaded ? 'loaded' : 'not_loaded'}),
    load: async () => {
      loaded = true
    },
    notEvaluated: async () => [],
    moderateImage: async (_data, source) => result(source),
    async *moderateMany(inputs, o = {}) {
      const scheduler = o.scheduler ?? DIRECT
      for await (const input of inputs) {
        const data = await scheduler.prepare(() => input.read())
        yield await scheduler.infer(() => engine.moderateImage(data, input.source, {steps: o.steps}))
      }
    },
    moderateVideo: async (_path, o) => ({
      source: o.source,
      is_safe: true,
      duration: 1,
      fps: o.fps,
      frames_analyzed: 1,
      stopped_early: false,
      violations: [],
      not_evaluated: [],
    }),
    categories: async () => ({preset: 'fast', model: 'fake', coverage: {evaluated: 0, total: 0, not_evaluated: []}, categories: []}),
    categoryStates: async () => [],
    close: async () => {},
    [Symbol.asyncDispose]: async () => {},
    ...over,
  }
  return engine
}

export interface Running {
  base: string
  handle: ModServer
  /** What the server logged. */
  logs: string[]
  stop(): Promise<void>
}

/** What a test server is told of the answers it broke (ServerOptions.brokenAnswer); `check()` throws once there are any. */
export function brokenAnswers(): {brokenAnswer: (problem: string) => void; check(): void} {
  const broken: string[] = []
  return {
    brokenAnswer: (problem) => broken.push(problem),
    check: () => {
      if (broken.length > 0) throw new Error(`answers that break their declared schemas:\n${broken.join('\n')}`)
    },
  }
}

/**
 * The server on port 0 of 127.0.0.1. Every answer that breaks its declared schema fails the test: stop() rejects
 * with the list (whatever status the test expected, and also where it reads no body).
 */
export async function start(engine: Engine, settings: ServerSettings, options: ServerOptions = {}): Promise<Running> {
  const logs: string[] = []
  const broken = brokenAnswers()
  const handle = buildServer(engine, settings, {log: (line, _level, fields) => logs.push(plainText(line, fields)), brokenAnswer: broken.brokenAnswer, ...options})
  await new Promise<void>((resolve) => handle.server.listen(0, '127.0.0.1', resolve))
  const {port} = handle.server.address() as AddressInfo
  const stop = async () => {
    await handle.close()
    broken.check()
  }
  return {base: `http://127.0.0.1:${port}`, handle, logs, stop}
}

/**
 * The toy model under the policy file `policyFile` (its hash lists and text rules too), loaded and served on
 * port 0; stop() closes the engine as well.
 */
export async function startWithPolicy(policyFile: string, settings: TestSettings, options: {tmpDir: string; threads?: number}): Promise<Running> {
  const {policy} = await loadPolicyFile(policyFile)
  const {tmpDir, threads} = options
  const engine = createEngine({
    preset: 'fast',
    modelDir: TOY_MODEL,
    cacheDir: settings.cacheDir,
    policy,
    limits: settings.limits,
    signals: withoutSpecialist(),
    ...(threads === undefined ? {} : {threads}),
  })
  await engine.load()
  const running = await start(engine, settings, {tmpDir})
  return {
    ...running,
    stop: async () => {
      await running.stop()
      await engine.close()
    },
  }
}

export const red = () => solidPng(255, 0, 0, 16, 16)

/**
 * Answers an image download as a remote that trickles: a PNG's first bytes, then one byte every 100 ms until the
 * connection closes. Resolves then, with how long it stayed open in ms.
 */
export function dripPng(res: ServerResponse): Promise<number> {
  const opened = Date.now()
  res.writeHead(200, {'content-type': 'image/png'}).write(Buffer.from([0x89, 0x50, 0x4e, 0x47]))
  const timer = setInterval(() => res.write(Buffer.from([0])), 100)
  return new Promise((resolve) =>
    res.on('close', () => {
      clearInterval(timer)
      resolve(Date.now() - opened)
    }),
  )
}
export const blue = () => solidPng(0, 0, 255, 16, 16)

export function form(field: string, files: {name: string; data: Buffer | string; type?: string}[]): FormData {
  const body = new FormData()
  for (const f of files) {
    const part = typeof f.data === 'string' ? f.data : new Uint8Array(f.data)
    body.append(field, new Blob([part], {type: f.type ?? 'application/octet-stream'}), f.name)
  }
  return body
}

/**
 * `count` image-job uploads of a few small files sent at once from one address to `base`: their answers, in the
 * order sent (`status`, and the job id or the error code).
 */
export async function concurrentJobUploads(base: string, count: number, data: Buffer, headers: Record<string, string> = {}): Promise<{status: number; id?: string; code?: string}[]> {
  const files = Array.from({length: 3}, (_, i) => ({name: `${i}.png`, data}))
  const answers = await Promise.all(Array.from({length: count}, () => call(`${base}/v1/jobs/images`, {method: 'POST', headers, body: form('files', files)})))
  return answers.map((a) => ({status: a.status, ...(a.status === 202 ? {id: a.body.id as string} : {code: a.body.error.code as string})}))
}

/** The document of a server with a key: the same operations as without one, plus their 401 answers. */
export const conformance = createConformance(
  openapiDocument({version: '0.0.0', apiKey: true, allowUrls: false, limits: DEFAULT_LIMITS}),
)

/** fetch, then the OpenAPI check of the answer; returns the status, headers and parsed body. */
export async function call(
  url: string,
  init: RequestInit = {},
): Promise<{status: number; headers: Headers; body: any}> {
  const res = await fetch(url, init)
  const body: any = await assertConforms(conformance, res, {method: init.method ?? 'GET'})
  // Every error answer names its X-Request-Id: checked here once, then left out so tests compare the rest. (A failed
  // job's body also has an `error`, inside a 200 answer: that one is the job's, not the answer's.)
  if (res.status >= 400 && typeof body?.error === 'object' && body.error !== null) {
    const {request_id: id, ...rest} = body.error
    if (id !== res.headers.get('x-request-id')) throw new Error(`error.request_id ${id} is not the X-Request-Id header`)
    return {status: res.status, headers: res.headers, body: {error: rest}}
  }
  return {status: res.status, headers: res.headers, body}
}

export function postJson(url: string, value: unknown, headers: Record<string, string> = {}) {
  return call(url, {
    method: 'POST',
    headers: {'content-type': 'application/json', ...headers},
    body: typeof value === 'string' ? value : JSON.stringify(value),
  })
}

/** {status, code} of an error answer, the shape every error assertion compares. */
export function errorOf(r: {status: number; body: any}): {status: number; code: string} {
  return {status: r.status, code: r.body?.error?.code}
}

export interface RawAnswer {
  status: number
  headers: IncomingHttpHeaders
  body: string
}

/**
 * A request whose body is written piece by piece by `write` (so a test controls when bytes arrive,
 * or stops sending); resolves with the answer, or rejects when the connection fails or no answer
 * came within `timeoutMs` (a server that waits for the rest of the body fails the test, not hangs it).
 */
/** A raw answer's error body without its request_id, once that is checked against the X-Request-Id header. */
export function rawError(answer: RawAnswer): {error: {code: string; message: string}} {
  const {error} = JSON.parse(answer.body) as {error: {code: string; message: string; request_id?: string}}
  const {request_id: id, ...rest} = error
  if (id !== answer.headers['x-request-id']) throw new Error(`error.request_id ${id} is not the X-Request-Id header`)
  return {error: rest}
}

export function rawRequest(
  url: string,
  options: {method?: string; headers?: Record<string, string | number>; timeoutMs?: number; localAddress?: string},
  write: (req: ClientRequest) => void,
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const {localAddress} = options
    const req = httpRequest(url, {method: options.method ?? 'POST', headers: options.headers, agent: false, localAddress}, (res) => {
      clearTimeout(timer)
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (d: string) => (body += d))
      res.on('end', () => resolve({status: res.statusCode ?? 0, headers: res.headers, body}))
      res.on('error', reject)
    })
    const timer = setTimeout(() => {
      req.destroy()
      reject(new Error('no answer in time'))
    }, options.timeoutMs ?? 5000)
    req.on('error', (e) => {
      clearTimeout(timer)
      reject(e)
    })
    write(req)
  })
}

/** The head and tail of a multipart body with one file part, to send around bytes written by hand. */
export function multipartParts(field: string, filename: string, boundary = 'modtestboundary'): {head: Buffer; tail: Buffer; type: string} {
  return {
    head: Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="${filename}"\r\n` +
        'Content-Type: application/octet-stream\r\n\r\n',
    ),
    tail: Buffer.from(`\r\n--${boundary}--\r\n`),
    type: `multipart/form-data; boundary=${boundary}`,
  }
}

/** A signed job callback as it arrived: its X-Mod-Signature header and its body. */
export interface Callback {
  signature: string | undefined
  body: string
}

export interface CallbackReceiver {
  /** Where to send callbacks: http://127.0.0.1:<port>/hook. */
  url: string
  /** Every callback so far, in order of arrival. */
  received: Callback[]
  /**
   * Resolves with the first callback about job `id` (already received or to come); rejects after `ms` without one,
   * so that a job that never ends fails its test instead of holding the file until the runner kills it.
   */
  callbackFor(id: string, ms?: number): Promise<Callback>
  close(): Promise<void>
}

/** An HTTP server on port 0 that answers every POST 204 and keeps what it was sent: the receiving end of job callbacks. */
export async function callbackReceiver(): Promise<CallbackReceiver> {
  const received: Callback[] = []
  const arrivals = new Set<() => void>()
  const server = createServer((req, res) => {
    let body = ''
    req.setEncoding('utf8').on('data', (d: string) => (body += d))
    req.on('end', () => {
      received.push({signature: req.headers['x-mod-signature'] as string | undefined, body})
      res.writeHead(204).end()
      for (const arrived of arrivals) arrived()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received,
    callbackFor: (id, ms = 60_000) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          arrivals.delete(check)
          reject(new Error(`no callback about job ${id} within ${ms} ms (${received.length} others received)`))
        }, ms)
        const check = () => {
          const found = received.find((c) => (JSON.parse(c.body) as {id: string}).id === id)
          if (!found) return
          arrivals.delete(check)
          clearTimeout(timer)
          resolve(found)
        }
        arrivals.add(check)
        check()
      }),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
}

/** The X-Mod-Signature a callback of `body` carries when signed with `secret`. */
export function signature(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`
}

/** Polls `check` until it is true (or fails after `ms`). */
export async function until(check: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not reached in time')
    await new Promise((r) => setTimeout(r, 10))
  }
}

/** One JSON log line of `mod serve`. */
export interface LogRecord {
  level: string
  msg: string
  pid: number
  worker: number
  [field: string]: unknown
}

export interface ServeProcess {
  child: ChildProcess
  /** stderr so far, line by line: the message of each JSON line (the raw text of any other). */
  lines: string[]
  /** stderr's JSON lines so far, parsed. */
  records: LogRecord[]
  /** Resolves with the first stderr line matching `pattern` (already printed or to come). */
  waitFor(pattern: RegExp, ms?: number): Promise<RegExpMatchArray>
  /** Resolves with the exit code (or the signal's name). */
  exited: Promise<number | string>
}

/** `node bin/run.js serve …` (the built CLI, or another of its long-running commands) with a clean MOD_* environment plus `env`. */
export function serveProcess(args: string[], env: Record<string, string>, command = 'serve'): ServeProcess {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MOD_')))
  const child = spawn(process.execPath, [BIN_PATH, command, ...args], {
    cwd: ROOT_PATH,
    env: {...base, NO_COLOR: '1', ...env},
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  const lines: string[] = []
  const records: LogRecord[] = []
  const watchers = new Set<() => void>()
  let partial = ''
  child.stderr?.setEncoding('utf8').on('data', (d: string) => {
    const parts = (partial + d).split('\n')
    partial = parts.pop() ?? ''
    for (const part of parts) {
      const record = part.startsWith('{') ? (JSON.parse(part) as LogRecord) : undefined
      if (record) records.push(record)
      lines.push(record ? record.msg : part)
    }
    for (const w of watchers) w()
  })
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)))
  // A deadline for a process that hangs, not a timing: on a loaded 2-core machine a start took over 15 s.
  const waitFor = (pattern: RegExp, ms = 60_000) =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      const timer = setTimeout(() => {
        watchers.delete(check)
        reject(new Error(`no stderr line matched ${pattern} in ${ms} ms; stderr:\n${lines.join('\n')}`))
      }, ms)
      const check = () => {
        for (const line of lines) {
          const m = pattern.exec(line)
          if (m) {
            clearTimeout(timer)
            watchers.delete(check)
            resolve(m)
            return
          }
        }
      }
      watchers.add(check)
      check()
    })
  return {child, lines, records, waitFor, exited}
}

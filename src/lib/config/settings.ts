import {statSync, type Stats} from 'node:fs'
import {homedir} from 'node:os'
import {dirname, join, resolve} from 'node:path'

import {whyUnreadable} from '../errno.js'
import {ModError} from '../errors.js'
import type {Int8Weights, Precision} from '../model/manifest-types.js'
import {PRESETS, type PresetName} from '../policy/types.js'
import {BUDGET_RANGE, MAX_TEXT_BUDGET, MIN_TEXT_BUDGET} from '../signals/text/read.js'
import {formatSizeExact} from '../sizes.js'
import {readApiKey, readApiKeys, type NamedKey} from './api-keys.js'
import {countOf, HOST_FORM, hostOf, invalid, MAX_TIMER_MS, parseBoolean, parseCount, parseSize, type Env} from './env.js'
import {DEFAULT_IMAGE_JOB_LIMITS, readJobSettings, type JobSettings} from './jobs.js'

export type {Env} from './env.js'

/** Sizes: "MB" means MiB (25 MB = 26 214 400 bytes). */
const MiB = 1024 * 1024

export interface Limits {
  maxBytes: number
  maxPixels: number
  maxBatch: number
  maxVideoBytes: number
  maxVideoSeconds: number
  urlTimeoutMs: number
  queueLimit: number
  /** Request bodies being received at once per worker (server); the queue admits a request only once its body is in. */
  maxUploads: number
  /** A request body that sends nothing for this long while the server reads it is answered 408 (server). */
  bodyTimeoutMs: number
  /**
   * Bytes per second a request body must average once its first MOD_BODY_TIMEOUT_MS are over, else it is answered
   * 408: a client that trickles cannot hold an upload place for long (server).
   */
  bodyMinRate: number
  /** Request bodies one client address (an IPv6 /64) may be sending at once per worker; more is 429 (server). */
  maxUploadsPerClient: number
  /** The files of one batch request together (server). */
  maxBatchBytes: number
  /**
   * Request bytes a worker holds in memory for requests not answered yet (uploaded images, JSON bodies, URL
   * downloads); a request that would go over it is refused with 503 (server).
   */
  maxBufferedBytes: number
}

/** What the engine and the commands that load a model need. */
export interface EngineSettings {
  /** Set when a flag or MOD_PRESET names it; otherwise the policy file's `preset:` or `fast` decides (config/load.ts). */
  preset?: PresetName
  modelDir?: string
  cacheDir: string
  configPath?: string
  headPath?: string
  ffmpeg?: string
  /** onnxruntime intra-op threads; undefined lets the model layer choose for the machine. */
  threads?: number
  /** Encoder weights: fp32 (default), or a model's int8 / fp16 variant. */
  precision: Precision
  /** MOD_INT8_WEIGHTS: how an int8 image encoder's weights run (model/int8-weights.ts); default auto. */
  int8Weights: Int8Weights
  /** MOD_TEXT_BUDGET: recogniser columns the text signal may read per image; wins over the policy's `text.budget`. */
  textBudget?: number
  limits: Limits
  /** Proxies for model downloads: https_proxy / HTTPS_PROXY, http_proxy / HTTP_PROXY, no_proxy / NO_PROXY. */
  proxy: {httpProxy?: string; httpsProxy?: string; noProxy?: string}
}

/** What `serve` and the REST server need. */
export interface ServerSettings {
  host: string
  /** 0 lets the system pick a free port. */
  port: number
  /** Processes, each with its own model; 1 serves in-process without node:cluster. */
  workers: number
  /** MOD_API_KEY: one key, named `default`. */
  apiKey?: string
  /** MOD_API_KEYS: named keys, besides MOD_API_KEY's; a job belongs to the key that made it. */
  apiKeys: readonly NamedKey[]
  allowUrls: boolean
  preload: boolean
  limits: Limits
  /** MOD_LOG_LEVEL: the least severe log line written. */
  logLevel: LogLevel
  /** MOD_CORS_ORIGINS: origins browsers may call from; `['*']` for any, empty (default) for no CORS at all. */
  corsOrigins: string[]
  /** MOD_DRAIN_DELAY_MS: after SIGTERM, how long /ready answers 503 while new connections are still served. */
  drainDelayMs: number
  /**
   * MOD_KEEPALIVE_TIMEOUT_MS: how long a connection is kept open, idle, after an answer for the client's next
   * request. Behind a proxy or balancer that keeps its connections to the server, it must outlast the proxy's own
   * idle timeout, or the proxy may send a request on a connection the server is closing (a 502 for an upload).
   */
  keepAliveMs: number
  /** MOD_SERVER_TIMING: moderation answers carry a Server-Timing header with the time of each step. */
  serverTiming: boolean
  jobs: JobSettings
}

/**
 * Every knob, read once from the adapter's typed input and MOD_* variables (input wins, then the variable, then
 * the default), validated: the engine's section (models, caches, limits on what it decodes) and the server's
 * (address, workers, key, URL fetching, preload, logs, jobs). Both carry the same `limits`; nothing below reads
 * the environment.
 */
export interface Settings {
  engine: EngineSettings
  server: ServerSettings
}

/** Values an adapter already parsed (a command's flags, camelCase); each falls back to its MOD_* variable. */
export interface SettingsInput {
  preset?: string
  modelDir?: string
  cacheDir?: string
  config?: string
  head?: string
  threads?: number
  precision?: string
  host?: string
  port?: number
  workers?: number
  /** A size per second, as MOD_BODY_MIN_RATE is written ("8KB"). */
  bodyMinRate?: string
  maxUploadsPerClient?: number
}

/** The MOD_* variable of every input, for messages and for the flags that declare it. */
export const SETTING_VARIABLES = {
  preset: 'MOD_PRESET',
  modelDir: 'MOD_MODEL_DIR',
  cacheDir: 'MOD_CACHE_DIR',
  config: 'MOD_CONFIG',
  head: 'MOD_HEAD',
  threads: 'MOD_THREADS',
  precision: 'MOD_PRECISION',
  host: 'MOD_HOST',
  port: 'MOD_PORT',
  workers: 'MOD_WORKERS',
  bodyMinRate: 'MOD_BODY_MIN_RATE',
  maxUploadsPerClient: 'MOD_MAX_UPLOADS_PER_CLIENT',
} as const satisfies Record<keyof SettingsInput, string>

/** The variables of a remote run (`mod scan --server`); MOD_API_KEY is also the key `mod serve` requires. */
export const CLIENT_VARIABLES = {
  server: 'MOD_SERVER',
  apiKey: 'MOD_API_KEY',
  journalKey: 'MOD_JOURNAL_KEY',
} as const

/** Log levels, most severe first; a level writes its lines and those above it. */
export const LOG_LEVELS = ['error', 'warn', 'info', 'debug'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]

export const DEFAULT_HOST = '127.0.0.1'
export const DEFAULT_PORT = 8000
export const DEFAULT_WORKERS = 1
/** Node's own default: an idle connection closes 5 s after its last answer. */
export const DEFAULT_KEEPALIVE_MS = 5000

/** ~/.cache/mod */
export function defaultCacheDir(): string {
  return join(homedir(), '.cache', 'mod')
}

export const DEFAULT_LIMITS: Limits = {
  maxBytes: 25 * MiB,
  maxPixels: 100_000_000,
  maxBatch: 16,
  maxVideoBytes: 200 * MiB,
  maxVideoSeconds: 600,
  urlTimeoutMs: 10_000,
  queueLimit: 64,
  maxUploads: uploadsFor(64),
  bodyTimeoutMs: 30_000,
  bodyMinRate: 8 * 1024,
  maxUploadsPerClient: perClientFor(uploadsFor(64)),
  maxBatchBytes: 100 * MiB,
  maxBufferedBytes: 256 * MiB,
}

/** Room for every queue place and as many requests again still uploading. */
function uploadsFor(queueLimit: number): number {
  return 2 * (queueLimit + 1)
}

/** A quarter of the upload places: one address cannot take them all, and a busy honest client rarely needs more. */
function perClientFor(maxUploads: number): number {
  return Math.max(1, Math.floor(maxUploads / 4))
}

export function parseLogLevel(name: string, value: string | undefined): LogLevel {
  if (value === undefined || value === '') return 'info'
  const v = value.trim().toLowerCase()
  if ((LOG_LEVELS as readonly string[]).includes(v)) return v as LogLevel
  throw invalid(name, value, `one of ${LOG_LEVELS.join(', ')}`)
}

/** `*`, or comma-separated origins as a browser sends them (`https://app.example.com`, no path). */
export function parseOrigins(name: string, value: string | undefined): string[] {
  const origins = (value ?? '').split(',').map((o) => o.trim()).filter((o) => o !== '')
  if (origins.includes('*')) {
    if (origins.length > 1) throw invalid(name, value as string, '`*` alone, or origins without `*`')
    return origins
  }
  for (const origin of origins) {
    let parsed: URL | undefined
    try {
      parsed = new URL(origin)
    } catch {}
    if (!parsed || !/^https?:$/.test(parsed.protocol) || parsed.origin !== origin) {
      throw invalid(name, value as string, `\`*\` or origins like https://app.example.com (no path or trailing slash): not ${origin}`)
    }
  }
  return origins
}

/** Recogniser columns per image, a whole number in the range the policy's `text.budget` takes; unset: undefined. */
export function parseTextBudget(name: string, value: string | undefined): number | undefined {
  if (value === undefined || value === '') return undefined
  const n = countOf(value, MIN_TEXT_BUDGET, MAX_TEXT_BUDGET)
  if (n === undefined) throw invalid(name, value, BUDGET_RANGE)
  return n
}

export const PRECISIONS: readonly Precision[] = ['fp32', 'int8', 'fp16']

export function parsePrecision(name: string, value: string | undefined): Precision {
  if (value === undefined || value === '') return 'fp32'
  if ((PRECISIONS as readonly string[]).includes(value)) return value as Precision
  throw invalid(name, value, `one of ${PRECISIONS.join(', ')}`)
}

export const INT8_WEIGHTS: readonly Int8Weights[] = ['auto', 'signed', 'unsigned']

export function parseInt8Weights(name: string, value: string | undefined): Int8Weights {
  if (value === undefined || value === '') return 'auto'
  if ((INT8_WEIGHTS as readonly string[]).includes(value)) return value as Int8Weights
  throw invalid(name, value, `one of ${INT8_WEIGHTS.join(', ')}`)
}

export function parsePreset(name: string, value: string | undefined): PresetName | undefined {
  if (value === undefined || value === '') return undefined
  if ((PRESETS as readonly string[]).includes(value)) return value as PresetName
  throw invalid(name, value, `one of ${PRESETS.join(', ')}`)
}

/**
 * A path setting, relative to `cwd`; a leading `~` or `~/` is the home folder, as a shell would have read it:
 * a value from an env file, a unit file or quotes reaches mod unexpanded (`MOD_CACHE_DIR='~/mod'`).
 */
function pathOf(value: string | undefined, cwd: string): string | undefined {
  if (value === undefined || value === '') return undefined
  if (value === '~' || value.startsWith('~/')) return join(homedir(), value.slice(1))
  return resolve(cwd, value)
}

/**
 * A path setting, resolved. An empty value typed on the command line (`--config "$POLICY"` with the variable unset)
 * names no file, and is refused: taken for "not given", a scan would judge by another policy, model or cache than
 * the one meant. An empty variable counts as unset, as every variable does.
 */
function pathSetting(input: SettingsInput, env: Env, key: 'cacheDir' | 'modelDir' | 'config' | 'head', cwd: string): string | undefined {
  const {value} = source(input, env, key)
  if (value === '') throw new ModError('invalid_config', `${flagOf(key)} is empty: give it a path, or leave the flag out`)
  return pathOf(value, cwd)
}

const flagOf = (key: keyof SettingsInput): string => `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`

/** An input value wins over its variable (an empty variable counts as unset); the name is the one to report. */
function source(input: SettingsInput, env: Env, key: keyof SettingsInput): {name: string; value: string | undefined} {
  const typed = input[key]
  const name = SETTING_VARIABLES[key]
  // A value an adapter parsed came from its flag, or from the variable the flag reads: both names, as a person types them.
  if (typed !== undefined) return {name: `${flagOf(key)} / ${name}`, value: String(typed)}
  return {name, value: env[name] === '' ? undefined : env[name]}
}

/**
 * The cache folder named (--cache-dir, MOD_CACHE_DIR) or the default. One that exists as something else than a
 * folder, or whose path cannot lead to a folder (a part of it a file, a loop of links), is refused here, rather
 * than failing later, as `internal: ENOTDIR`, in whichever command first reads or writes it. A folder that does not
 * exist yet is made when first written.
 */
function cacheDirOf(input: SettingsInput, env: Env, cwd: string): string {
  const dir = pathSetting(input, env, 'cacheDir', cwd) ?? defaultCacheDir()
  const refuse = (why: string) => new ModError('invalid_config', `the cache folder ${dir} cannot be used: ${why}; give --cache-dir or MOD_CACHE_DIR a folder`)
  for (let at = dir; ; at = dirname(at)) {
    let info: Stats | undefined
    try {
      info = statSync(at, {throwIfNoEntry: false})
    } catch (e) {
      // Node 20 throws ENOTDIR where Node 22 and later give no entry: the part that is a file is found further up.
      if ((e as NodeJS.ErrnoException).code !== 'ENOTDIR') throw refuse(whyUnreadable(e))
    }
    if (info) {
      if (!info.isDirectory()) throw refuse(at === dir ? 'it is not a folder' : `${at} is not a folder`)
      return dir
    }
    if (dirname(at) === at) return dir
  }
}

/**
 * The most onnxruntime threads per model. onnxruntime sets no bound of its own and starts them all: 5 000 took
 * minutes and held off SIGTERM, where no machine mod runs on has that many cores to use; 256 is past any that has.
 */
export const MAX_THREADS = 256

/**
 * The most `serve` workers. Each is a process with its own engine and at least one inference thread, all forked at
 * once at start: more than any machine's cores keep busy (a typo's 1000 forked a thousand engines), at about 125-200
 * MiB each beside the shared weights.
 */
export const MAX_WORKERS = 128

function count(input: SettingsInput, env: Env, key: 'threads' | 'port' | 'workers', min: number, max = Number.MAX_SAFE_INTEGER): number | undefined {
  const {name, value} = source(input, env, key)
  if (value === undefined) return undefined
  return parseCount(name, value, 0, min, max)
}

/**
 * The buffered-bytes budget must hold the largest single request with room for form overhead: a whole batch,
 * or the base64 JSON text of one image (4/3 of it); otherwise such a request could never be served. Unset, it
 * grows to that (a MOD_MAX_BYTES raised past 127 MiB raised nothing else and stopped every command); given, a
 * smaller value is refused.
 */
function checkBuffered(limits: Limits, given: string | undefined): void {
  const needed = Math.max(limits.maxBatchBytes, 2 * limits.maxBytes) + MiB
  if (given === undefined || given === '') {
    limits.maxBufferedBytes = Math.max(limits.maxBufferedBytes, needed)
    return
  }
  if (limits.maxBufferedBytes < needed) {
    throw invalid(
      'MOD_MAX_BUFFERED_BYTES',
      given ?? String(limits.maxBufferedBytes),
      `at least ${formatSizeExact(needed)}: the larger of MOD_MAX_BATCH_BYTES and 2 x MOD_MAX_BYTES, plus 1 MiB`,
    )
  }
}

/** The lower-case spelling wins, as in curl; an empty value is unset. */
function proxyVariable(env: Env, lower: string): string | undefined {
  return env[lower] || env[lower.toUpperCase()] || undefined
}

export function readSettings(input: SettingsInput, env: Env, cwd = process.cwd()): Settings {
  const preset = source(input, env, 'preset')
  const precision = source(input, env, 'precision')
  const host = source(input, env, 'host')
  const hostName = host.value === undefined ? DEFAULT_HOST : hostOf(host.value)
  if (hostName === undefined) throw invalid(host.name, host.value as string, HOST_FORM)
  const queueLimit = parseCount('MOD_QUEUE_LIMIT', env.MOD_QUEUE_LIMIT, DEFAULT_LIMITS.queueLimit, 0)
  const maxUploads = parseCount('MOD_MAX_UPLOADS', env.MOD_MAX_UPLOADS, uploadsFor(queueLimit))
  const minRate = source(input, env, 'bodyMinRate')
  const perClient = source(input, env, 'maxUploadsPerClient')
  const limits: Limits = {
    maxBytes: parseSize('MOD_MAX_BYTES', env.MOD_MAX_BYTES, DEFAULT_LIMITS.maxBytes),
    maxPixels: parseCount('MOD_MAX_PIXELS', env.MOD_MAX_PIXELS, DEFAULT_LIMITS.maxPixels),
    maxBatch: parseCount('MOD_MAX_BATCH', env.MOD_MAX_BATCH, DEFAULT_LIMITS.maxBatch),
    maxVideoBytes: parseSize('MOD_MAX_VIDEO_BYTES', env.MOD_MAX_VIDEO_BYTES, DEFAULT_LIMITS.maxVideoBytes),
    maxVideoSeconds: parseCount('MOD_MAX_VIDEO_SECONDS', env.MOD_MAX_VIDEO_SECONDS, DEFAULT_LIMITS.maxVideoSeconds),
    urlTimeoutMs: parseCount('MOD_URL_TIMEOUT_MS', env.MOD_URL_TIMEOUT_MS, DEFAULT_LIMITS.urlTimeoutMs, 1, MAX_TIMER_MS),
    queueLimit,
    maxUploads,
    bodyTimeoutMs: parseCount('MOD_BODY_TIMEOUT_MS', env.MOD_BODY_TIMEOUT_MS, DEFAULT_LIMITS.bodyTimeoutMs, 1, MAX_TIMER_MS),
    bodyMinRate: parseSize(minRate.name, minRate.value, DEFAULT_LIMITS.bodyMinRate),
    maxUploadsPerClient: parseCount(perClient.name, perClient.value, perClientFor(maxUploads)),
    maxBatchBytes: parseSize('MOD_MAX_BATCH_BYTES', env.MOD_MAX_BATCH_BYTES, DEFAULT_LIMITS.maxBatchBytes),
    maxBufferedBytes: parseSize('MOD_MAX_BUFFERED_BYTES', env.MOD_MAX_BUFFERED_BYTES, DEFAULT_LIMITS.maxBufferedBytes),
  }
  checkBuffered(limits, env.MOD_MAX_BUFFERED_BYTES)
  const engine: EngineSettings = {
    preset: parsePreset(preset.name, preset.value),
    modelDir: pathSetting(input, env, 'modelDir', cwd),
    cacheDir: cacheDirOf(input, env, cwd),
    configPath: pathSetting(input, env, 'config', cwd),
    headPath: pathSetting(input, env, 'head', cwd),
    ffmpeg: pathOf(env.MOD_FFMPEG, cwd),
    threads: count(input, env, 'threads', 1, MAX_THREADS),
    precision: parsePrecision(precision.name, precision.value),
    int8Weights: parseInt8Weights('MOD_INT8_WEIGHTS', env.MOD_INT8_WEIGHTS),
    textBudget: parseTextBudget('MOD_TEXT_BUDGET', env.MOD_TEXT_BUDGET),
    limits,
    proxy: {
      httpProxy: proxyVariable(env, 'http_proxy'),
      httpsProxy: proxyVariable(env, 'https_proxy'),
      noProxy: proxyVariable(env, 'no_proxy'),
    },
  }
  const server: ServerSettings = {
    host: hostName,
    port: count(input, env, 'port', 0, 65_535) ?? DEFAULT_PORT,
    workers: count(input, env, 'workers', 1, MAX_WORKERS) ?? DEFAULT_WORKERS,
    limits,
    apiKey: readApiKey(env),
    apiKeys: readApiKeys(env),
    allowUrls: parseBoolean('MOD_ALLOW_URLS', env.MOD_ALLOW_URLS, false),
    preload: parseBoolean('MOD_PRELOAD', env.MOD_PRELOAD, true),
    logLevel: parseLogLevel('MOD_LOG_LEVEL', env.MOD_LOG_LEVEL),
    corsOrigins: parseOrigins('MOD_CORS_ORIGINS', env.MOD_CORS_ORIGINS),
    drainDelayMs: parseCount('MOD_DRAIN_DELAY_MS', env.MOD_DRAIN_DELAY_MS, 0, 0, MAX_TIMER_MS),
    keepAliveMs: parseCount('MOD_KEEPALIVE_TIMEOUT_MS', env.MOD_KEEPALIVE_TIMEOUT_MS, DEFAULT_KEEPALIVE_MS, 1, MAX_TIMER_MS),
    serverTiming: parseBoolean('MOD_SERVER_TIMING', env.MOD_SERVER_TIMING, false),
    jobs: {
      ...readJobSettings(env, cwd),
      images: {
        maxItems: parseCount('MOD_MAX_JOB_ITEMS', env.MOD_MAX_JOB_ITEMS, DEFAULT_IMAGE_JOB_LIMITS.maxItems),
        maxBytes: parseSize('MOD_MAX_JOB_BYTES', env.MOD_MAX_JOB_BYTES, DEFAULT_IMAGE_JOB_LIMITS.maxBytes),
        maxPerClient: parseCount('MOD_MAX_JOBS_PER_CLIENT', env.MOD_MAX_JOBS_PER_CLIENT, DEFAULT_IMAGE_JOB_LIMITS.maxPerClient),
      },
    },
  }
  return {engine, server}
}

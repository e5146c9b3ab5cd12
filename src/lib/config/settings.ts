import {homedir} from 'node:os'
import {join, resolve} from 'node:path'

import {ModError} from '../errors.js'
import type {Precision} from '../model/manifest-types.js'
import {PRESETS, type PresetName} from '../policy/types.js'

/** Sizes: "MB" means MiB (CONTRACTS §1). */
const MiB = 1024 * 1024

export interface Limits {
  maxBytes: number
  maxPixels: number
  maxBatch: number
  maxVideoBytes: number
  maxVideoSeconds: number
  urlTimeoutMs: number
  queueLimit: number
}

/** Every knob, read once from flags and MOD_* variables (a flag wins), validated. Nothing below reads the environment. */
export interface Settings {
  /** Set when a flag or MOD_PRESET names it; otherwise the policy file's `preset:` or `fast` decides (config/load.ts). */
  preset?: PresetName
  modelDir?: string
  cacheDir: string
  configPath?: string
  headPath?: string
  apiKey?: string
  allowUrls: boolean
  preload: boolean
  ffmpeg?: string
  /** onnxruntime intra-op threads; undefined lets the model layer choose for the machine. */
  threads?: number
  /** Encoder weights: fp32 (default), or a model's int8 / fp16 variant. */
  precision: Precision
  limits: Limits
}

/** Flags that commands pass through; each has its MOD_* variable. */
export interface SettingsFlags {
  preset?: string
  'model-dir'?: string
  'cache-dir'?: string
  config?: string
  head?: string
  threads?: number
  precision?: string
}

export type Env = Readonly<Record<string, string | undefined>>

export const DEFAULT_LIMITS: Limits = {
  maxBytes: 25 * MiB,
  maxPixels: 100_000_000,
  maxBatch: 16,
  maxVideoBytes: 200 * MiB,
  maxVideoSeconds: 600,
  urlTimeoutMs: 10_000,
  queueLimit: 64,
}

function invalid(name: string, value: string, expected: string): ModError {
  return new ModError('invalid_config', `${name}=${JSON.stringify(value)} is not valid: expected ${expected}`)
}

export function parseBoolean(name: string, value: string | undefined, fallback: boolean): boolean {
  if (value === undefined || value === '') return fallback
  const v = value.trim().toLowerCase()
  if (['1', 'true', 'yes', 'on'].includes(v)) return true
  if (['0', 'false', 'no', 'off'].includes(v)) return false
  throw invalid(name, value, 'true or false')
}

export function parseCount(name: string, value: string | undefined, fallback: number, min = 1): number {
  if (value === undefined || value === '') return fallback
  const n = Number(value.trim())
  if (!Number.isInteger(n) || n < min) throw invalid(name, value, `a whole number >= ${min}`)
  return n
}

/** Bytes as a plain integer or with a unit: "26214400", "25MB", "25 MiB", "512k" (K/M/G are binary units). */
export function parseSize(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined || value === '') return fallback
  const m = /^\s*(\d+(?:\.\d+)?)\s*(b|k|kb|kib|m|mb|mib|g|gb|gib)?\s*$/i.exec(value)
  if (!m) throw invalid(name, value, 'a size in bytes, e.g. 26214400 or 25MB')
  const unit = (m[2] ?? 'b').toLowerCase()[0]
  const factor = unit === 'k' ? 1024 : unit === 'm' ? MiB : unit === 'g' ? 1024 * MiB : 1
  const n = Math.floor(Number(m[1]) * factor)
  if (n < 1) throw invalid(name, value, 'a size of at least 1 byte')
  return n
}

export const PRECISIONS: readonly Precision[] = ['fp32', 'int8', 'fp16']

export function parsePrecision(name: string, value: string | undefined): Precision {
  if (value === undefined || value === '') return 'fp32'
  if ((PRECISIONS as readonly string[]).includes(value)) return value as Precision
  throw invalid(name, value, `one of ${PRECISIONS.join(', ')}`)
}

export function parsePreset(name: string, value: string | undefined): PresetName | undefined {
  if (value === undefined || value === '') return undefined
  if ((PRESETS as readonly string[]).includes(value)) return value as PresetName
  throw invalid(name, value, `one of ${PRESETS.join(', ')}`)
}

function pathOf(value: string | undefined, cwd: string): string | undefined {
  return value === undefined || value === '' ? undefined : resolve(cwd, value)
}

export function readSettings(flags: SettingsFlags, env: Env, cwd = process.cwd()): Settings {
  const threads = flags.threads ?? (env.MOD_THREADS ? parseCount('MOD_THREADS', env.MOD_THREADS, 1) : undefined)
  return {
    preset: flags.preset !== undefined ? parsePreset('--preset', flags.preset) : parsePreset('MOD_PRESET', env.MOD_PRESET),
    modelDir: pathOf(flags['model-dir'] ?? env.MOD_MODEL_DIR, cwd),
    cacheDir: pathOf(flags['cache-dir'] ?? env.MOD_CACHE_DIR, cwd) ?? join(homedir(), '.cache', 'mod'),
    configPath: pathOf(flags.config ?? env.MOD_CONFIG, cwd),
    headPath: pathOf(flags.head ?? env.MOD_HEAD, cwd),
    apiKey: env.MOD_API_KEY === '' ? undefined : env.MOD_API_KEY,
    allowUrls: parseBoolean('MOD_ALLOW_URLS', env.MOD_ALLOW_URLS, false),
    preload: parseBoolean('MOD_PRELOAD', env.MOD_PRELOAD, true),
    ffmpeg: pathOf(env.MOD_FFMPEG, cwd),
    threads,
    precision: flags.precision !== undefined ? parsePrecision('--precision', flags.precision) : parsePrecision('MOD_PRECISION', env.MOD_PRECISION),
    limits: {
      maxBytes: parseSize('MOD_MAX_BYTES', env.MOD_MAX_BYTES, DEFAULT_LIMITS.maxBytes),
      maxPixels: parseCount('MOD_MAX_PIXELS', env.MOD_MAX_PIXELS, DEFAULT_LIMITS.maxPixels),
      maxBatch: parseCount('MOD_MAX_BATCH', env.MOD_MAX_BATCH, DEFAULT_LIMITS.maxBatch),
      maxVideoBytes: parseSize('MOD_MAX_VIDEO_BYTES', env.MOD_MAX_VIDEO_BYTES, DEFAULT_LIMITS.maxVideoBytes),
      maxVideoSeconds: parseCount('MOD_MAX_VIDEO_SECONDS', env.MOD_MAX_VIDEO_SECONDS, DEFAULT_LIMITS.maxVideoSeconds),
      urlTimeoutMs: parseCount('MOD_URL_TIMEOUT_MS', env.MOD_URL_TIMEOUT_MS, DEFAULT_LIMITS.urlTimeoutMs),
      queueLimit: parseCount('MOD_QUEUE_LIMIT', env.MOD_QUEUE_LIMIT, DEFAULT_LIMITS.queueLimit, 0),
    },
  }
}

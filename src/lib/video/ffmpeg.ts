import {execFile} from 'node:child_process'
import {constants} from 'node:fs'
import {access, stat} from 'node:fs/promises'

import {ModError} from '../errors.js'

const HOW_TO_FIX = 'install ffmpeg (e.g. `apt-get install ffmpeg` or `brew install ffmpeg`) or set MOD_FFMPEG to its path'
const PROBE_TIMEOUT_MS = 10_000

/** The one error for "no usable ffmpeg", with the fix. */
export function ffmpegMissing(problem: string): ModError {
  return new ModError('ffmpeg_missing', `${problem}: ${HOW_TO_FIX}`)
}

async function isExecutableFile(path: string): Promise<boolean> {
  try {
    const info = await stat(path)
    await access(path, constants.X_OK)
    return info.isFile()
  } catch {
    return false
  }
}

/** `ffmpeg-static` is an optional dependency: a variable specifier keeps TypeScript and bundlers from requiring it. */
async function importFfmpegStatic(): Promise<unknown> {
  const name = 'ffmpeg-static'
  return import(name)
}

/** The binary path that `ffmpeg-static` exports (its default export, a string or null), if any. */
async function staticBinary(loadStatic: () => Promise<unknown>): Promise<string | undefined> {
  try {
    const mod = await loadStatic()
    const path = typeof mod === 'string' ? mod : (mod as {default?: unknown} | null | undefined)?.default
    return typeof path === 'string' && (await isExecutableFile(path)) ? path : undefined
  } catch {
    return undefined
  }
}

/** Runs `ffmpeg -version` without a shell: the operating system's own PATH search finds it, or not. */
function onPath(command: string): Promise<boolean> {
  return new Promise((resolve) => {
    execFile(command, ['-version'], {timeout: PROBE_TIMEOUT_MS, windowsHide: true}, (error) => resolve(!error))
  })
}

/**
 * The ffmpeg binary to run: `explicit` (MOD_FFMPEG, passed in by the config layer) when given, which must be an
 * executable file; else the binary of the optional `ffmpeg-static` package when it is installed; else `ffmpeg`
 * found on PATH. `loadStatic` exists for tests. Throws `ffmpeg_missing` saying how to fix it.
 */
export async function resolveFfmpeg(
  explicit?: string,
  loadStatic: () => Promise<unknown> = importFfmpegStatic,
): Promise<string> {
  if (explicit !== undefined) {
    if (await isExecutableFile(explicit)) return explicit
    throw ffmpegMissing(`MOD_FFMPEG is ${JSON.stringify(explicit)}, which is not an executable file`)
  }
  const bundled = await staticBinary(loadStatic)
  if (bundled !== undefined) return bundled
  if (await onPath('ffmpeg')) return 'ffmpeg'
  throw ffmpegMissing('ffmpeg was not found, and videos need it')
}

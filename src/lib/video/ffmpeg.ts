import {constants} from 'node:fs'
import {access, stat} from 'node:fs/promises'

import {ModError} from '../errors.js'

const HOW_TO_FIX = 'install ffmpeg (e.g. `apt-get install ffmpeg` or `brew install ffmpeg`) or set MOD_FFMPEG to its path'

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

/** The command of an ffmpeg looked for on PATH: the system's own search finds it when a run starts, or not. */
const ON_PATH = 'ffmpeg'

/** ffmpeg_missing for a run that could not start `command` (resolveFfmpeg's answer). */
export function ffmpegNotRun(command: string): ModError {
  return ffmpegMissing(command === ON_PATH ? 'ffmpeg was not found, and videos need it' : `ffmpeg could not be run from ${JSON.stringify(command)}`)
}

/**
 * The ffmpeg binary to run: `explicit` (MOD_FFMPEG, passed in by the config layer) when given, which must be an
 * executable file; else the binary of the optional `ffmpeg-static` package when it is installed; else `ffmpeg`, found
 * on PATH by each run (not tried here: starting Debian's ffmpeg costs as much CPU as listing a short video's
 * packets; a run that cannot start it is ffmpegNotRun's `ffmpeg_missing`). `loadStatic` exists for tests. Throws
 * `ffmpeg_missing` saying how to fix it.
 */
export async function resolveFfmpeg(
  explicit?: string,
  loadStatic: () => Promise<unknown> = importFfmpegStatic,
): Promise<string> {
  if (explicit !== undefined) {
    if (await isExecutableFile(explicit)) return explicit
    throw ffmpegMissing(`MOD_FFMPEG is ${JSON.stringify(explicit)}, which is not an executable file`)
  }
  return (await staticBinary(loadStatic)) ?? ON_PATH
}

// Shared by the video tests: clips made by ffmpeg from lavfi sources at test time, and a look at our child processes.
import {execFile} from 'node:child_process'
import {chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {promisify} from 'node:util'

import {isModError} from '../../../src/lib/errors.js'
import type {RgbImage} from '../../../src/lib/types.js'
import {type DecodeOptions, DEFAULT_DECODE_LIMITS, decodeFrames} from '../../../src/lib/video/frames.js'

export function tempDir(): {dir: string; remove: () => void} {
  const dir = mkdtempSync(join(tmpdir(), 'mod-video-test-'))
  return {dir, remove: () => rmSync(dir, {recursive: true, force: true})}
}

export async function ffmpeg(...args: string[]): Promise<void> {
  await promisify(execFile)('ffmpeg', ['-y', '-nostdin', '-hide_banner', '-loglevel', 'error', ...args])
}

/** A clip of solid colours, `seconds` each, encoded by `codec` (mpeg4 in MP4 unless told). */
export async function colourClip(
  path: string,
  colours: string[],
  seconds: number,
  {size = '64x64', rate = 10, codec = ['-c:v', 'mpeg4', '-q:v', '2']}: {size?: string; rate?: number; codec?: string[]} = {},
): Promise<string> {
  const inputs = colours.flatMap((c) => ['-f', 'lavfi', '-i', `color=c=${c}:s=${size}:d=${seconds}:r=${rate}`])
  const labels = colours.map((_, i) => `[${i}:v]`).join('')
  await ffmpeg(...inputs, '-filter_complex', `${labels}concat=n=${colours.length}:v=1:a=0`, ...codec, path)
  return path
}

/** An executable shell script standing in for ffmpeg. */
export function fakeFfmpeg(path: string, body: string): string {
  writeFileSync(path, `#!/bin/sh\n${body}\n`)
  chmodSync(path, 0o755)
  return path
}

/** This process's child processes (zombies included), except tsx's esbuild service. */
export function childProcesses(): {pid: number; name: string; state: string}[] {
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .flatMap((pid) => {
      try {
        const m = /^\d+ \((.*)\) (\S) (\d+)/.exec(readFileSync(`/proc/${pid}/stat`, 'utf8'))
        return m && Number(m[3]) === process.pid && m[1] !== 'esbuild' ? [{pid: Number(pid), name: m[1], state: m[2]}] : []
      } catch {
        return []
      }
    })
}

/** Mean of one channel (0 red, 1 green, 2 blue) over the frame: what the fake scorers look at instead of a model. */
export function meanChannel(image: RgbImage, channel: 0 | 1 | 2): number {
  let sum = 0
  for (let i = channel; i < image.data.length; i += 3) sum += image.data[i]
  return sum / (image.width * image.height)
}

/** Decoding options with the defaults of settings and of frames.ts, changed by `over`. */
export function decodeOptions(over: Partial<DecodeOptions> = {}): DecodeOptions {
  return {ffmpeg: 'ffmpeg', fps: 1, maxSeconds: 600, maxPixels: 100_000_000, ...DEFAULT_DECODE_LIMITS, ...over}
}

/** How decoding `path` fails, and after how many frames; throws when it does not fail. */
export async function decodeFailure(path: string, over: Partial<DecodeOptions> = {}): Promise<{code: string; message: string; decoded: number}> {
  let decoded = 0
  try {
    for await (const _ of decodeFrames(path, decodeOptions(over))) decoded++
  } catch (e) {
    return isModError(e) ? {code: e.code, message: e.message, decoded} : {code: 'not a ModError', message: String(e), decoded}
  }
  throw new Error(`decoding ${path} did not fail`)
}

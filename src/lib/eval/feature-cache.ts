/**
 * Image features kept on disk, per model and file content, so that a second eval, calibrate or head train
 * over the same images runs no image encoder:
 *
 *   <cacheDir>/features/<model key>/<sha256[0:2]>/<sha256>.bin
 *
 * A file is written to a temp name and renamed, so an interrupted run leaves no half file and two runs at
 * once each write a whole file (the last rename wins; both hold the same features). A file that cannot be
 * read back (truncated, another format version) counts as missing and is recomputed.
 *
 * Binary layout, little-endian: "MODF", u32 version (5), u32 frame count (an animation's frames scored; 1 for a
 * still image), u32 flags (bit 0: an animation with pictures left out, not scored), then per frame: u32 embedding
 * length, f32 embedding[], u32 signal count, then per signal: u16 name length, UTF-8 name, u32 value count, f32
 * values[]. The outputs of signals that keep no features (`live`) are not written.
 */
import {randomBytes} from 'node:crypto'
import {readFile, rename, rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {makeDir} from '../make-dir.js'
import type {Features, FrameFeatures} from './features.js'

const MAGIC = 'MODF'
/**
 * Changes whenever a file's features would, the layout or the frames an animation is scored on: 3 since those are
 * chosen by the time each is on screen, so that features kept from the frames chosen before are recomputed; 4 since
 * a file says whether an animation's pictures were left out, which a file of 3 cannot tell; 5 since an AVIF's nclx
 * colour and a PNG cICP's BT.709 or HDR transfer are read as browsers show them (same layout as 4).
 */
const VERSION = 5
/** Bit 0 of a file's flags: Features.picturesLeftOut. */
const PICTURES_LEFT_OUT = 1

export interface FeatureCache {
  readonly dir: string
  get(sha256: string): Promise<Features | undefined>
  put(sha256: string, features: Features): Promise<void>
}

/** A model key as one folder name: characters a path cannot hold become "_". */
export function featureCacheDir(cacheDir: string, modelKey: string): string {
  return join(cacheDir, 'features', modelKey.replace(/[^\w.-]/g, '_'))
}

export function encodeFeatures(f: Features): Buffer {
  const frames: FrameFeatures[] = [f, ...(f.later ?? [])]
  const parts = frames.map((frame) => {
    const names = Object.keys(frame.signals).sort()
    const nameBytes = names.map((n) => Buffer.from(n, 'utf8'))
    return {frame, names, nameBytes}
  })
  let size = 4 + 4 + 4 + 4
  for (const {frame, names, nameBytes} of parts) {
    size += 4 + frame.embedding.length * 4 + 4
    names.forEach((n, i) => (size += 2 + nameBytes[i].length + 4 + frame.signals[n].length * 4))
  }
  const out = Buffer.alloc(size)
  let at = out.write(MAGIC, 0, 'latin1')
  at = out.writeUInt32LE(VERSION, at)
  at = out.writeUInt32LE(frames.length, at)
  at = out.writeUInt32LE(f.picturesLeftOut ? PICTURES_LEFT_OUT : 0, at)
  const floats = (v: Float32Array) => {
    at = out.writeUInt32LE(v.length, at)
    for (const x of v) at = out.writeFloatLE(x, at)
  }
  for (const {frame, names, nameBytes} of parts) {
    floats(frame.embedding)
    at = out.writeUInt32LE(names.length, at)
    names.forEach((n, i) => {
      at = out.writeUInt16LE(nameBytes[i].length, at)
      at += nameBytes[i].copy(out, at)
      floats(frame.signals[n])
    })
  }
  return out
}

/** The features of a cache file, or undefined when it is not a whole file of this version. */
export function decodeFeatures(b: Buffer): Features | undefined {
  let at = 0
  const need = (n: number) => at + n <= b.length
  const u32 = (): number | undefined => {
    if (!need(4)) return undefined
    at += 4
    return b.readUInt32LE(at - 4)
  }
  const floats = (): Float32Array | undefined => {
    const n = u32()
    if (n === undefined || !need(n * 4)) return undefined
    const v = new Float32Array(n)
    for (let i = 0; i < n; i++, at += 4) v[i] = b.readFloatLE(at)
    return v
  }
  const frame = (): FrameFeatures | undefined => {
    const embedding = floats()
    const count = embedding === undefined ? undefined : u32()
    if (embedding === undefined || count === undefined) return undefined
    const signals: Record<string, Float32Array> = {}
    for (let i = 0; i < count; i++) {
      if (!need(2)) return undefined
      const len = b.readUInt16LE(at)
      at += 2
      if (!need(len)) return undefined
      const name = b.toString('utf8', at, at + len)
      at += len
      const values = floats()
      if (values === undefined) return undefined
      signals[name] = values
    }
    return {embedding, signals}
  }
  if (!need(8) || b.toString('latin1', 0, 4) !== MAGIC || b.readUInt32LE(4) !== VERSION) return undefined
  at = 8
  const count = u32()
  const flags = u32()
  if (count === undefined || count === 0 || flags === undefined) return undefined
  const frames: FrameFeatures[] = []
  for (let i = 0; i < count; i++) {
    const f = frame()
    if (f === undefined) return undefined
    frames.push(f)
  }
  if (at !== b.length) return undefined
  const [first, ...later] = frames
  const leftOut = flags & PICTURES_LEFT_OUT ? {picturesLeftOut: true as const} : {}
  return {...first, ...(later.length > 0 ? {later} : {}), ...leftOut}
}

export function openFeatureCache(cacheDir: string, modelKey: string): FeatureCache {
  const dir = featureCacheDir(cacheDir, modelKey)
  const pathOf = (sha: string) => join(dir, sha.slice(0, 2), `${sha}.bin`)
  return {
    dir,
    async get(sha) {
      try {
        return decodeFeatures(await readFile(pathOf(sha)))
      } catch {
        return undefined
      }
    },
    async put(sha, features) {
      const path = pathOf(sha)
      const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
      try {
        await makeDir(join(path, '..'))
        await writeFile(tmp, encodeFeatures(features))
        await rename(tmp, path)
      } catch {
        // The cache only saves time: an unwritable cache folder must not stop the run.
        await rm(tmp, {force: true}).catch(() => undefined)
      }
    },
  }
}

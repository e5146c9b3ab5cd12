/**
 * Which int8 weights an int8 encoder runs with, and the signed copy of its file. Int8 exports store matrix
 * weights as uint8 (the presets' image encoders, the stand-in's): right on every CPU, since onnxruntime's uint8 ×
 * uint8 kernel widens before it adds, but slower on a VNNI CPU than uint8 × int8, which there is exact too. So
 * where the u8s8 kernel is exact (int8-kernel.ts), the encoder runs on an int8 copy of its weights, derived
 * exactly (int8-signed.ts) once into the cache folder, not downloaded:
 *
 *   <cacheDir>/int8/<model>-<hash of its path>-<sha256 of its bytes>.onnx   the signed copy
 *   <cacheDir>/int8/<model>-<hash of its path>-source.json                  size, mtime and sha256 last seen
 *
 * The record spares hashing the file at every start; a file whose size or modification time changed is hashed
 * again, and a new copy replaces the old one (with its optimised graphs in `<cacheDir>/ort/`).
 */
import {createHash, randomBytes} from 'node:crypto'
import {readdir, readFile, rename, rm, stat, writeFile} from 'node:fs/promises'
import {join, resolve} from 'node:path'

import {makeDir} from '../make-dir.js'
import type {Int8Weights} from './manifest-types.js'
import {u8s8KernelExact} from './int8-kernel.js'
import {cachePrefix, removeCachedGraphs} from './session.js'

export type Int8Choice = Exclude<Int8Weights, 'auto'>

/**
 * `auto`: signed on an x86-64 CPU whose u8s8 kernel is exact (VNNI), unsigned elsewhere: on x86-64 without VNNI
 * it would saturate, and on other CPUs (arm64) its speed has not been measured. 7-bit ("reduce-range") weights,
 * which that kernel would sum exactly there too, keep too little of the model: their embeddings' cosine with fp32
 * fell below 0.999 (bench/int8.ts --reduce-range). `probe` is for tests.
 */
export async function chooseInt8Weights(mode: Int8Weights, probe = u8s8KernelExact, arch: string = process.arch): Promise<Int8Choice> {
  if (mode !== 'auto') return mode
  return arch === 'x64' && (await probe()) ? 'signed' : 'unsigned'
}

interface SourceRecord {
  size: number
  mtimeMs: number
  sha256: string
  /** Whether the file has uint8 matrix weights, hence a signed copy; false: the file itself is used. */
  signed: boolean
}

const isFile = (path: string) =>
  stat(path).then(
    (s) => s.isFile(),
    () => false,
  )

async function writeAtomically(path: string, bytes: Uint8Array): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`
  try {
    await writeFile(tmp, bytes)
    await rename(tmp, path)
  } finally {
    await rm(tmp, {force: true})
  }
}

/**
 * The file to open for `path` with signed weights: its signed copy in the cache, made now if missing, or `path`
 * itself when it has no uint8 matrix weights. A cache that cannot be written is not fatal: the file itself
 * (unsigned) is opened, as a session is opened without its cached graph.
 */
export async function signedModelFile(path: string, cacheDir: string): Promise<string> {
  const file = resolve(path)
  const root = join(cacheDir, 'int8')
  const prefix = cachePrefix(file)
  const copy = (sha256: string) => join(root, `${prefix}${sha256}.onnx`)
  const recordPath = join(root, `${prefix}source.json`)
  try {
    const info = await stat(file)
    const known = await readFile(recordPath, 'utf8').then((t) => JSON.parse(t) as SourceRecord, () => undefined)
    if (known && known.size === info.size && known.mtimeMs === info.mtimeMs && (!known.signed || (await isFile(copy(known.sha256))))) {
      return known.signed ? copy(known.sha256) : path
    }
    const bytes = await readFile(file)
    const sha256 = createHash('sha256').update(bytes).digest('hex')
    await makeDir(root)
    let signed = await isFile(copy(sha256))
    if (!signed && !(known?.sha256 === sha256 && !known.signed)) {
      // Loaded only here: the ONNX codec costs a start about 0.2 s, and a warm start finds the copy made.
      const {signedInt8Weights} = await import('./int8-signed.js')
      const derived = signedInt8Weights(bytes)
      signed = derived.converted > 0
      if (signed) await writeAtomically(copy(sha256), derived.model)
    }
    const record: SourceRecord = {size: info.size, mtimeMs: info.mtimeMs, sha256, signed}
    await writeAtomically(recordPath, new TextEncoder().encode(JSON.stringify(record)))
    await removeOtherCopies(root, prefix, signed ? copy(sha256) : undefined, cacheDir)
    return signed ? copy(sha256) : path
  } catch {
    return path
  }
}

/** Copies of earlier contents of the same file, and their optimised graphs. */
async function removeOtherCopies(root: string, prefix: string, current: string | undefined, cacheDir: string): Promise<void> {
  for (const name of await readdir(root)) {
    const other = join(root, name)
    if (!name.startsWith(prefix) || !name.endsWith('.onnx') || other === current) continue
    await rm(other, {force: true})
    await removeCachedGraphs(other, cacheDir)
  }
}

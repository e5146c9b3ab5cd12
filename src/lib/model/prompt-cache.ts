/**
 * Prompt embeddings cached on disk, keyed by model id and prompt text, so that a warm start runs no text
 * encoder: one JSON file per model under `<cacheDir>/prompts/<model id>/embeddings.json`, mapping
 * sha256(prompt) to the little-endian float32 embedding in base64.
 */
import {createHash, randomBytes} from 'node:crypto'
import {readFile, rename, rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {ModError} from '../errors.js'
import {makeDir} from '../make-dir.js'

const VERSION = 1
const FILE = 'embeddings.json'

export interface PromptCacheOptions {
  cacheDir: string
  modelId: string
  /** Embeds the texts not in the cache, in order. */
  embed: (missing: string[]) => Promise<Float32Array[]>
}

interface CacheFile {
  version: number
  model: string
  dim: number
  entries: Record<string, string>
}

export function promptCachePath(cacheDir: string, modelId: string): string {
  // Manifests allow ids of letters, digits, '-', '_' and '.' only; any other character still becomes '_' here, so
  // that an id from elsewhere cannot make the cache's path more than one folder deep.
  return join(cacheDir, 'prompts', modelId.replace(/[^\w.-]/g, '_'), FILE)
}

function keyOf(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex')
}

function encode(v: Float32Array): string {
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64')
}

function decode(b64: string, dim: number): Float32Array | undefined {
  const bytes = Buffer.from(b64, 'base64')
  if (bytes.length !== dim * 4) return undefined
  const out = new Float32Array(dim)
  new Uint8Array(out.buffer).set(bytes)
  return out
}

/** The cached vectors by key; a missing, corrupt or foreign file counts as empty (it is rebuilt on write). */
async function readCache(path: string, modelId: string): Promise<{dim?: number; vectors: Map<string, Float32Array>}> {
  const vectors = new Map<string, Float32Array>()
  let file: Partial<CacheFile>
  try {
    file = JSON.parse(await readFile(path, 'utf8')) as Partial<CacheFile>
  } catch {
    return {vectors}
  }
  const {dim, entries} = file ?? {}
  if (file?.version !== VERSION || file.model !== modelId || !Number.isInteger(dim) || typeof entries !== 'object' || !entries) {
    return {vectors}
  }
  for (const [key, b64] of Object.entries(entries)) {
    const v = typeof b64 === 'string' ? decode(b64, dim as number) : undefined
    if (!v) return {vectors: new Map()}
    vectors.set(key, v)
  }
  return {dim, vectors}
}

/** Temp file + rename, so a reader (another worker) sees the old file or the new one, never half of one. */
async function writeCache(path: string, modelId: string, dim: number, vectors: Map<string, Float32Array>): Promise<void> {
  const file: CacheFile = {version: VERSION, model: modelId, dim, entries: {}}
  for (const [key, v] of vectors) file.entries[key] = encode(v)
  const dir = join(path, '..')
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
  try {
    await makeDir(dir)
    await writeFile(tmp, JSON.stringify(file))
    await rename(tmp, path)
  } catch {
    // The cache only saves time: an unwritable cache folder must not stop moderation.
    await rm(tmp, {force: true}).catch(() => undefined)
  }
}

/** Embeddings of every text, calling `embed` only for texts not cached yet (never, on a warm start). */
export async function embedPrompts(texts: string[], opts: PromptCacheOptions): Promise<Map<string, Float32Array>> {
  const path = promptCachePath(opts.cacheDir, opts.modelId)
  const cache = await readCache(path, opts.modelId)
  const unique = [...new Set(texts)]
  const missing = unique.filter((t) => !cache.vectors.has(keyOf(t)))

  if (missing.length > 0) {
    const fresh = await opts.embed(missing)
    if (fresh.length !== missing.length) {
      throw new ModError('internal', `prompt embedding returned ${fresh.length} vectors for ${missing.length} texts`)
    }
    const dim = fresh[0].length
    // Vectors of another size belong to an older model under the same id: start over.
    if (cache.dim !== undefined && cache.dim !== dim) cache.vectors.clear()
    missing.forEach((t, i) => cache.vectors.set(keyOf(t), fresh[i]))
    await writeCache(path, opts.modelId, dim, cache.vectors)
  }

  return new Map(unique.map((t) => [t, cache.vectors.get(keyOf(t)) as Float32Array]))
}

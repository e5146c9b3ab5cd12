/**
 * Every onnxruntime session of `mod` is created here, with the same options, so that each model runner (CLIP,
 * and any other) runs alike and a benchmark can open a bare session exactly as the runners do.
 *
 * With a cache folder, the model's optimised graph is kept in `<cacheDir>/ort/` in onnxruntime's own save
 * format with the weights in a separate file (`optimizedModelFilePath` with external initializers), and beside
 * them the weights as onnxruntime prepacks them for this CPU's matrix kernels. A session then starts from that:
 * onnxruntime maps the weights file instead of parsing a protobuf that holds them and copying them out of it,
 * which roughly halves the CPU time of creating the session, and runs on the weights where they lie in the
 * mapped file. The weights are then file pages, read-only and shared: the workers of `mod serve --workers N`
 * hold one copy between them instead of one each (bench/README.md, memory). The graph is saved fully optimised
 * (onnxruntime's `all` level), convolutions in the blocked layout of this CPU's vector width included: saved at
 * a lower level, every process would lay out each convolution's weights again in its own memory at load (the
 * NSFW specialist's InceptionV3: about 90 MiB a process). Since the saved layouts depend on the CPU, the CPU
 * (its model and, where the system lists them, its instruction-set flags) is part of the entry's key.
 */
import {createHash, randomBytes} from 'node:crypto'
import {createRequire} from 'node:module'
import {cpus} from 'node:os'
import {readdir, readFile, rename, rm, stat} from 'node:fs/promises'
import {basename, join, resolve} from 'node:path'

import * as ort from 'onnxruntime-node'

import {ModError} from '../errors.js'
import {isRunning} from '../processes.js'
import {makeDir} from '../make-dir.js'
import {InferenceError, openThreadSession, type ModelSession} from './inference-thread.js'

export type {ModelSession} from './inference-thread.js'

export interface SessionOptions {
  /** onnxruntime intra-op threads. */
  threads: number
  /**
   * Keep onnxruntime's memory arena and memory patterns: buffers stay allocated between runs (faster repeated
   * runs) but never shrink. For sessions used for a short while (the text encoder), leave it off so that they
   * leave nothing behind.
   */
  keepArena: boolean
  /** MOD_CACHE_DIR: when given, the optimised graph is cached under `<cacheDir>/ort/`. */
  cacheDir?: string
}

/** Graph optimisations saved in the cache: all of them, this CPU's layouts included (see above). */
const SAVED_LEVEL = 'all'
const MODEL_FILE = 'model.onnx'
const WEIGHTS_FILE = 'weights.bin'
/** A temporary build folder this old was left by a process that died while building (its pid may be reused since). */
const ABANDONED_MS = 10 * 60_000

/** The options of every session. */
export function sessionOptions(o: Omit<SessionOptions, 'cacheDir'>): ort.InferenceSession.SessionOptions {
  return {
    executionProviders: ['cpu'],
    intraOpNumThreads: o.threads,
    // One graph at a time per process: parallel branches would only compete with the intra-op threads.
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    enableCpuMemArena: o.keepArena,
    enableMemPattern: o.keepArena,
    // Idle intra-op threads block instead of spinning: a process runs two sessions (CLIP, the NSFW specialist),
    // each with its own pool, and spinning threads of one take the cores the other is computing on
    // (bench/spinning.ts: two sessions run one after the other took about twice the CPU time with spinning).
    extra: {session: {intra_op: {allow_spinning: '0'}}},
  }
}

/**
 * Opens an ONNX file; a file onnxruntime cannot load is `invalid_config`, naming the file. With a cache
 * folder, starts from the cached optimised graph when there is one for this very file (same path, size and
 * modification time), onnxruntime version and options; otherwise builds it. A cache entry that cannot be
 * read or written is never fatal: a broken entry is removed and built again, and an unwritable cache folder
 * only means the session is created from the model file.
 */
export async function openSession(path: string, o: SessionOptions): Promise<ModelSession> {
  if (o.cacheDir === undefined) return create(path, sessionOptions(o))
  const entry = await cacheEntry(path, o, o.cacheDir)
  const cached = join(entry.dir, MODEL_FILE)
  const options = sessionOptions(o)
  const present = await stat(cached).then(
    () => true,
    () => false,
  )
  const fromCache = present ? await openThreadSession(cached, options).catch(() => undefined) : undefined
  if (fromCache) {
    // A build interrupted by a killed process is removed by the next one to open the entry, not only by a build.
    await removeStale(entry, {buildsOnly: true}).catch(() => undefined)
    return provenOnFirstRun(fromCache, entry, () => create(path, options))
  }
  if (present) await rm(entry.dir, {recursive: true, force: true})
  if (!(await buildEntry(path, o, entry))) return create(path, options)
  return openThreadSession(cached, options).catch(() => create(path, options))
}

/**
 * A session read from the cache whose first run fails is replaced by one made from the model file, and the entry
 * removed (the next process builds it again): the entry loaded but was laid out for another CPU than the one
 * running it, which onnxruntime only finds when it runs (a convolution's block size; seen where an emulator reports
 * the host's /proc/cpuinfo flags while emulating another CPU, so that both share a key). The run is then asked of
 * the new session; if that fails too, its error is the answer. Runs asked meanwhile wait for the first.
 */
function provenOnFirstRun(cached: ModelSession, entry: CacheEntry, reopen: () => Promise<ModelSession>): ModelSession {
  let current: Promise<ModelSession> | undefined
  const replace = async (): Promise<ModelSession> => {
    await cached.release()
    await rm(entry.dir, {recursive: true, force: true}).catch(() => undefined)
    return reopen()
  }
  return {
    inputNames: cached.inputNames,
    outputNames: cached.outputNames,
    inputMetadata: cached.inputMetadata,
    async run(feeds, fetches) {
      if (current) return (await current).run(feeds, fetches)
      const first = cached.run(feeds, fetches)
      current = first.then(
        () => cached,
        (e: unknown) => (e instanceof InferenceError ? replace() : cached),
      )
      return first.catch(async (e: unknown) => {
        if (!(e instanceof InferenceError)) throw e
        return (await current!).run(feeds, fetches)
      })
    },
    async release() {
      await (await (current ?? Promise.resolve(cached)).catch(() => cached)).release()
    },
  }
}

/** The session, run in the process's inference thread (inference-thread.ts). */
async function create(path: string, options: ort.InferenceSession.SessionOptions): Promise<ModelSession> {
  return openThreadSession(path, options).catch((e: unknown) => {
    throw loadError(path, e)
  })
}

const loadError = (path: string, e: unknown) => new ModError('invalid_config', `cannot load ${path}: ${(e as Error).message}`)

interface CacheEntry {
  /** `<cacheDir>/ort`. */
  root: string
  /** `<root>/<model>-<hash of its path>-<hash of the rest of the key>`. */
  dir: string
  /** Names of this model's entries start with it: other entries with it are stale. */
  prefix: string
}

const ORT_VERSION = (createRequire(import.meta.url)('onnxruntime-node/package.json') as {version: string}).version

/**
 * The CPU's architecture, model and instruction-set flags: what prepacked weights and blocked convolutions are laid
 * out for. The flags come from /proc/cpuinfo (`flags` on x86, `Features` on Arm) where there is one; elsewhere the
 * model's name alone tells CPUs apart.
 */
async function cpuKey(): Promise<string> {
  const info = await readFile('/proc/cpuinfo', 'utf8').catch(() => '')
  const flags = /^(?:flags|Features)\s*:(.*)$/m.exec(info)?.[1].trim().split(/\s+/).sort().join(' ') ?? ''
  return `${process.arch} ${cpus()[0]?.model ?? 'unknown'} ${flags}`
}

const digest = (value: unknown) => createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 16)

/** The start of the names of every cache entry made from the model file at this absolute path. */
export function cachePrefix(file: string): string {
  return `${basename(file).replace(/\.onnx$/, '').replace(/[^\w.-]/g, '_')}-${digest(file)}-`
}

/** The cache entries of the optimised graphs of the model file at `path` (folders under `<cacheDir>/ort`). */
export async function cachedGraphs(path: string, cacheDir: string): Promise<string[]> {
  const root = join(cacheDir, 'ort')
  const prefix = cachePrefix(resolve(path))
  return (await readdir(root).catch(() => [])).filter((n) => n.startsWith(prefix)).map((n) => join(root, n))
}

/** Removes the cached optimised graphs of a model file that is gone (a derived file replaced by a newer one). */
export async function removeCachedGraphs(path: string, cacheDir: string): Promise<void> {
  await Promise.all((await cachedGraphs(path, cacheDir)).map((entry) => rm(entry, {recursive: true, force: true})))
}

/**
 * Where the optimised graph of this model file is cached. The key holds what changes the saved files: the
 * model file (path, size, modification time), the onnxruntime version, the saved optimisation level, execution
 * providers and the CPU (cpuKey). Threads and memory options do not change them, so every worker shares one entry.
 */
export async function cacheEntry(path: string, o: SessionOptions, cacheDir: string): Promise<CacheEntry> {
  const file = resolve(path)
  let size = -1
  let mtime = -1
  try {
    const s = await stat(file)
    size = s.size
    mtime = s.mtimeMs
  } catch {
    // A missing file gets a key of its own; creating the session will report it.
  }
  const root = join(cacheDir, 'ort')
  const prefix = cachePrefix(file)
  const key = digest({size, mtime, ort: ORT_VERSION, level: SAVED_LEVEL, providers: sessionOptions(o).executionProviders, cpu: await cpuKey()})
  return {root, dir: join(root, prefix + key), prefix}
}

/** The process that named a temporary build folder (`<entry>.tmp-<pid>-<random>`) is gone, or it is old. */
async function abandoned(folder: string): Promise<boolean> {
  const pid = Number(/\.tmp-(\d+)-[0-9a-f]+$/.exec(folder)?.[1])
  if (Number.isInteger(pid) && pid !== process.pid && !isRunning(pid)) return true
  return Date.now() - (await stat(folder)).mtimeMs >= ABANDONED_MS
}

/**
 * Removes the builds of this model file left by processes that are gone (not `keep`, this process's own) and, after a
 * build, its other entries (an older file's, as a build replaces them; a read leaves them, `buildsOnly`).
 */
async function removeStale(entry: CacheEntry, o: {keep?: string; buildsOnly?: boolean}): Promise<void> {
  for (const name of await readdir(entry.root)) {
    const other = join(entry.root, name)
    if (!name.startsWith(entry.prefix) || other === entry.dir || other === o.keep) continue
    const build = name.includes('.tmp-')
    // A temporary folder is another process's build in progress, unless that process is gone.
    if (build ? !(await abandoned(other)) : o.buildsOnly) continue
    await rm(other, {recursive: true, force: true})
  }
}

/**
 * Optimises the model once and saves the graph and its weights into the entry. They are written to a
 * temporary folder renamed into place, so a process starting meanwhile (another worker) never reads half a
 * file; stale entries of the same model file are removed. Returns false when the cache cannot be written.
 */
async function buildEntry(path: string, o: SessionOptions, entry: CacheEntry): Promise<boolean> {
  const tmp = `${entry.dir}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`
  try {
    await makeDir(tmp)
    // Built here, once: the session only writes the files and is released. A failure (a full disk, as much as a
    // model onnxruntime cannot load) leaves the session to be made from the model file, which names a bad model.
    const builder = await ort.InferenceSession.create(path, {
      ...sessionOptions(o),
      graphOptimizationLevel: SAVED_LEVEL,
      // onnxruntime warns that a graph saved at this level holds this CPU's layouts: the key says so already.
      logSeverityLevel: 3,
      optimizedModelFilePath: join(tmp, MODEL_FILE),
      extra: {
        session: {
          ...(sessionOptions(o).extra as {session: object}).session,
          optimized_model_external_initializers_file_name: WEIGHTS_FILE,
          optimized_model_external_initializers_min_size_in_bytes: '1024',
          save_external_prepacked_constant_initializers: '1',
        },
      },
    })
    await builder.release()
    await rename(tmp, entry.dir).catch(async (e: NodeJS.ErrnoException) => {
      // Another process put the same entry in place first: theirs is as good.
      if (e.code !== 'ENOTEMPTY' && e.code !== 'EEXIST') throw e
    })
    await removeStale(entry, {keep: tmp})
    return true
  } catch {
    return false
  } finally {
    await rm(tmp, {recursive: true, force: true}).catch(() => undefined)
  }
}

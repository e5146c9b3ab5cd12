/**
 * Downloads a manifest's files into a model folder so that no half file is ever used: each file streams into
 * `.partial/<path>.part` (resumed with a Range request when a part exists), is checked against the manifest's
 * size and sha256, synced and renamed into place; manifest.json is written last, so a folder without it is
 * never taken for an installed model. A file the manifest pins no sha256 for is trusted on first use: the
 * installed manifest records the hash downloaded, marked `first_use` (`pinned` for verified files).
 */
import {createHash} from 'node:crypto'
import {createReadStream} from 'node:fs'
import {open, readFile, rename, rm, stat, writeFile} from 'node:fs/promises'
import {dirname, join} from 'node:path'

import {interceptors, request, type Agent, type Dispatcher, type EnvHttpProxyAgent} from 'undici'

import {whyUnreadable} from '../errno.js'
import {isModError, ModError} from '../errors.js'
import {BODY_BUFFER_BYTES, copyEagerly} from '../fetch/body-buffer.js'
import {humanSeconds} from '../durations.js'
import {connectionProblem} from '../fetch/url.js'
import {dispatcherFor, type ProxySettings} from '../fetch/proxy-agent.js'
import {formatSize, formatSizeExact} from '../sizes.js'
import {makeDir} from '../make-dir.js'
import {hashFile, type Verified} from './file-hash.js'
import {withInstallLock} from './install-lock.js'
import {MANIFEST_FILE} from './manifest.js'
import type {Manifest, ModelFile} from './manifest-types.js'
import {makeInstallFolder} from './install-folder.js'

/** Where files are written before they are whole and verified (shared with `addModelFile`). */
export const PARTIAL_DIR = '.partial'
const MAX_REDIRECTIONS = 5
/** A server that sends nothing for this long (no connection, no answer, no next bytes) stops the pull, its part kept. */
const IDLE_MS = 60_000

export interface PullProgress {
  file: string
  /** Bytes of this file on disk so far, a resumed part included. */
  received: number
  total?: number
}

export interface PulledFile {
  file: string
  size: number
  sha256: string
  /** True when the file was already in place and verified. */
  skipped: boolean
  /** True when checked against a sha256 the manifest pins; false when trusted on first use. */
  pinned: boolean
}

export interface PullOptions {
  onProgress?: (p: PullProgress) => void
  onFile?: (f: PulledFile) => void
  signal?: AbortSignal
  /** Default: an undici Agent that follows redirects (Hugging Face answers with one to its CDN). */
  dispatcher?: Dispatcher
  /** Reduced-precision encoders to install too, beside the fp32 files. */
  variants?: ('int8' | 'fp16')[]
  /** Proxies for the default dispatcher (HTTPS_PROXY and friends, read by the config layer). */
  proxy?: ProxySettings
  /** The most bytes taken of a file without a pinned size from a server that gives no length; default MAX_UNPINNED_BYTES. */
  maxUnpinnedBytes?: number
  /** The least a file's transfer must bring in each span of this many ms, else it stops; default SLOWEST. */
  slowest?: Pace
  /** How long the default dispatcher waits for a connection, an answer, or the next bytes of a body; default IDLE_MS. */
  idleMs?: number
}

/** Bytes in a span of time. */
export interface Pace {
  bytes: number
  ms: number
}

/**
 * A transfer that brings less than this in a minute is stopped, its part kept to resume: undici's timeout is on the
 * wait between two chunks, so a server sending a byte every few seconds held `mod models pull` (a CI step, an image
 * build) for days. 64 KiB a minute is about 1 KiB/s, far under any link that can fetch a model.
 */
const SLOWEST: Pace = {bytes: 64 * 1024, ms: 60_000}

/** The pull's own dispatcher: through the proxies when any is set, else direct; redirects followed either way. */
function defaultDispatcher(proxy: ProxySettings | undefined, idleMs: number): Agent | EnvHttpProxyAgent {
  return dispatcherFor({headersTimeout: idleMs, bodyTimeout: idleMs, connect: {timeout: idleMs}}, proxy)
}

/** A failed connection or transfer in words: undici's timeouts say how long the server kept silent. */
function networkProblem(ctx: Context, e: unknown): string {
  const code = (e as {code?: unknown} | null)?.code
  const idle = humanSeconds(ctx.opts.idleMs ?? IDLE_MS)
  if (code === 'UND_ERR_HEADERS_TIMEOUT') return `the server took the request but sent no answer for ${idle}`
  if (code === 'UND_ERR_BODY_TIMEOUT') return `the server sent nothing for ${idle}`
  return typeof code === 'string' ? connectionProblem(e) : (e as Error).message
}

interface Context {
  dest: string
  opts: PullOptions
  dispatcher: Dispatcher
}

/**
 * The most bytes taken of a file whose size the manifest does not pin from a server that gives no length: above the
 * largest file of any preset (the accurate preset's image encoder, 1.2 GB), so that a server that never ends cannot
 * fill the disk.
 */
const MAX_UNPINNED_BYTES = 4 * 1024 * 1024 * 1024

/** A download's failure; `local: true` in its context for one of this machine (the disk, another installer), not the network. */
function failed(message: string, context?: Record<string, unknown>): ModError {
  return new ModError('download_failed', message, context)
}

/** Errno codes of a folder mod may not write, where the cache folder given is to blame, not the download. */
const UNWRITABLE = new Set(['EACCES', 'EPERM', 'EROFS'])

/**
 * A failure of this machine's file system while installing into `dest` (a folder mod may not write, a full disk, a
 * name too long, a folder where a file goes) as one message naming the path and why, instead of Node's error; `path`
 * names the file when the error does not (a write), `stopped` says how far a download got, `again` what to run once
 * space is freed. Anything else is returned as it is.
 */
export function localFailure(e: unknown, dest: string, path?: string, stopped?: string, again = 'pull again'): unknown {
  const error = e as NodeJS.ErrnoException & {dest?: string}
  if (isModError(e) || typeof error?.code !== 'string' || typeof error.syscall !== 'string') return e
  // A rename names its source and its destination: the destination is the file the user knows.
  const where = error.dest ?? error.path ?? path ?? dest
  const what = stopped ?? `cannot ${/^(read|l?stat|scandir)$/.test(error.syscall) ? 'read' : 'write'} ${where}`
  if (error.code === 'ENOSPC' || error.code === 'EDQUOT') {
    const full = error.code === 'ENOSPC' ? 'full' : 'over its quota'
    return failed(`the disk holding ${dest} is ${full}: ${what}; free space and ${again}${stopped ? ' to resume' : ''}`, {local: true})
  }
  if (UNWRITABLE.has(error.code) || error.code === 'ENAMETOOLONG') {
    const folder = error.code === 'ENAMETOOLONG' ? 'a folder with a shorter path' : 'a folder mod can write'
    return new ModError('invalid_config', `${what}: ${whyUnreadable(e)}; give MOD_CACHE_DIR (or --cache-dir) ${folder}`)
  }
  return failed(`${what}: ${whyUnreadable(e)}`, {local: true})
}

async function sizeOf(path: string): Promise<number | undefined> {
  try {
    const s = await stat(path)
    return s.isFile() ? s.size : undefined
  } catch {
    return undefined
  }
}

/** Flushes a file to disk, so that a crash after the rename cannot leave an empty or short file in place. */
export async function syncFile(path: string): Promise<void> {
  const handle = await open(path, 'r+')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}

/** The file already in place, when it matches what the manifest knows of it. */
async function installedCopy(path: string, file: ModelFile): Promise<Verified | undefined> {
  const size = await sizeOf(path)
  if (size === undefined || (file.size !== undefined && size !== file.size)) return undefined
  const verified = await hashFile(path)
  return file.sha256 === undefined || verified.sha256 === file.sha256 ? verified : undefined
}

function header(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const v = headers[name]
  return Array.isArray(v) ? v[0] : v
}

type Response = Dispatcher.ResponseData

async function get(ctx: Context, file: ModelFile, url: string, offset: number, version?: string): Promise<Response> {
  try {
    return await request(url, {
      method: 'GET',
      dispatcher: ctx.dispatcher,
      signal: ctx.opts.signal,
      headers: offset > 0 ? {range: `bytes=${offset}-`, ...(version === undefined ? {} : {'if-range': version})} : {},
    })
  } catch (e) {
    if (ctx.opts.signal?.aborted) throw failed(`download of ${file.path} was interrupted`)
    // undici says a proxy's refusal as "Proxy response (403) !== 200 when HTTP Tunneling".
    const proxyStatus = /^Proxy response \((\d+)\)/.exec((e as Error).message)?.[1]
    throw failed(`cannot fetch ${file.path} from ${url}: ${proxyStatus ? `the proxy answered HTTP ${proxyStatus}` : networkProblem(ctx, e)}`)
  }
}

/** Beside a part: the version of the file it holds as its server named it (a strong ETag, else Last-Modified). */
const versionFile = (part: string): string => `${part}.version`

/** Records the version a whole file's answer names, for the If-Range of a resume; none is recorded without one. */
async function recordVersion(part: string, res: Response): Promise<void> {
  const etag = header(res.headers, 'etag')
  const version = etag !== undefined && !etag.startsWith('W/') ? etag : header(res.headers, 'last-modified')
  if (version === undefined) await rm(versionFile(part), {force: true})
  else await writeFile(versionFile(part), version)
}

/**
 * Starts the transfer, resuming at `offset` when the server honours the range; returns where it really starts. The
 * range is asked If-Range the version the part was of, so that a file changed since is sent whole; a file without a
 * pinned sha256, which nothing else checks, is resumed only so.
 */
async function startTransfer(ctx: Context, file: ModelFile, url: string, part: string, offset: number): Promise<{res: Response; start: number}> {
  const version = offset > 0 ? await readFile(versionFile(part), 'utf8').catch(() => undefined) : undefined
  if (offset > 0 && (version !== undefined || file.sha256 !== undefined)) {
    const res = await get(ctx, file, url, offset, version)
    const range = /^bytes (\d+)-/.exec(header(res.headers, 'content-range') ?? '')
    if (res.statusCode === 206 && range && Number(range[1]) === offset) return {res, start: offset}
    if (res.statusCode === 200) {
      await recordVersion(part, res)
      return {res, start: 0}
    }
    // 416 (the part is already whole, or longer than the file) or an odd range: start over.
    await res.body.dump().catch(() => undefined)
  }
  const res = await get(ctx, file, url, 0)
  if (res.statusCode === 200) await recordVersion(part, res)
  return {res, start: 0}
}

/**
 * Downloads `file` into its part and puts it in place once whole and verified. A part left by a pull that stopped is
 * resumed; one as long as the pinned size needs no transfer, its sha256 decides. A resumed download whose sha256
 * differs is fetched once more from zero: the bytes kept from before may be what is wrong (a damaged disk, a part of
 * another version of the file).
 */
async function download(ctx: Context, file: ModelFile, url: string): Promise<Verified> {
  const part = join(ctx.dest, PARTIAL_DIR, `${file.path}.part`)
  await makeDir(dirname(part))
  let offset = (await sizeOf(part)) ?? 0
  if (file.size !== undefined && offset > file.size) offset = 0
  let got: Verified & {start: number}
  if (offset > 0 && offset === file.size && file.sha256 !== undefined) {
    // A pull stopped between the last byte and the rename: the server would answer 416 to any range.
    got = {...(await hashFile(part)), start: offset}
    if (got.sha256 !== file.sha256) got = await transfer(ctx, file, url, part, 0)
  } else {
    got = await transfer(ctx, file, url, part, offset)
  }
  if (got.start > 0 && file.sha256 !== undefined && got.sha256 !== file.sha256) got = await transfer(ctx, file, url, part, 0)
  if (file.sha256 !== undefined && got.sha256 !== file.sha256) {
    await rm(part, {force: true})
    throw failed(`${file.path} has sha256 ${got.sha256}, expected ${file.sha256}; the download was deleted`, {
      file: file.path,
      expected: file.sha256,
      actual: got.sha256,
    })
  }
  await syncFile(part)
  const final = join(ctx.dest, file.path)
  await makeDir(dirname(final))
  await rename(part, final)
  return {size: got.size, sha256: got.sha256}
}

/** One transfer of `file` into `part` from `offset` (0: from the start); its size, its sha256 (the part's bytes before `start` included) and where it really started. */
async function transfer(ctx: Context, file: ModelFile, url: string, part: string, offset: number): Promise<Verified & {start: number}> {
  const {opts} = ctx
  const {res, start} = await startTransfer(ctx, file, url, part, offset)
  if (res.statusCode < 200 || res.statusCode > 299 || (res.statusCode === 206 && start === 0)) {
    await res.body.dump().catch(() => undefined)
    throw failed(`cannot fetch ${file.path}: ${url} answered HTTP ${res.statusCode}`, {status: res.statusCode})
  }
  const length = Number(header(res.headers, 'content-length'))
  const total = file.size ?? (Number.isFinite(length) && length >= 0 ? start + length : undefined)
  // A file without a pinned size from a server that gives no length is taken up to MAX_UNPINNED_BYTES.
  const cap = total ?? opts.maxUnpinnedBytes ?? MAX_UNPINNED_BYTES

  const hash = createHash('sha256')
  if (start > 0) {
    for await (const chunk of createReadStream(part, {end: start - 1})) hash.update(chunk as Buffer)
  }
  let received = start
  opts.onProgress?.({file: file.path, received, total})
  const slowest = opts.slowest ?? SLOWEST
  let span = {from: Date.now(), received}
  // Enforced as bytes arrive: a server sending more than the manifest promises is cut off, not stored.
  const take = (chunk: Buffer): void => {
    received += chunk.length
    const now = Date.now()
    if (now - span.from >= slowest.ms) {
      const brought = received - span.received
      if (brought < slowest.bytes) throw new Error(`the server sent ${formatSize(brought)} in the last ${humanSeconds(slowest.ms)}, under the ${formatSize(slowest.bytes)} a transfer must bring in that time`)
      span = {from: now, received}
    }
    if (file.size !== undefined && received > file.size) throw failed(`${file.path} is larger than the ${formatSizeExact(file.size)} the manifest gives`)
    if (received > cap) {
      throw failed(`${file.path} is larger than ${formatSizeExact(cap)}, ${total === undefined ? 'the most a model file without a pinned size is taken' : 'the length the server gave'}`)
    }
    hash.update(chunk)
    opts.onProgress?.({file: file.path, received, total})
  }

  const out = await open(part, start > 0 ? 'a' : 'w')
  // A failed write is this machine's failure, not the connection's: kept apart from the body's errors.
  let writeFailure: {error: unknown} | undefined
  try {
    // Read as it arrives (copyEagerly): a slow disk must not stop undici reading the connection.
    await copyEagerly(res.body, async (chunk) => {
      take(chunk)
      try {
        await out.write(chunk)
      } catch (e) {
        writeFailure = {error: e}
        throw e
      }
    }, BODY_BUFFER_BYTES, opts.signal)
  } catch (e) {
    if (opts.signal?.aborted) {
      throw failed(`download of ${file.path} was interrupted after ${formatSize(received)}; pull again to resume`)
    }
    if (writeFailure) throw localFailure(writeFailure.error, ctx.dest, part, `${file.path} stopped after ${formatSize(received)}`)
    if (isModError(e)) {
      await rm(part, {force: true})
      throw e
    }
    throw failed(
      `download of ${file.path} stopped after ${formatSize(received)}${total === undefined ? '' : ` of ${formatSize(total)}`} ` +
        `(${networkProblem(ctx, e)}); pull again to resume`,
    )
  } finally {
    await out.close()
  }

  if (total !== undefined && received < total) {
    throw failed(`download of ${file.path} stopped after ${formatSize(received)} of ${formatSize(total)}; pull again to resume`)
  }
  return {size: received, sha256: hash.digest('hex'), start}
}

/** Writes manifest.json atomically: the folder counts as installed from this rename on. */
export async function writeManifest(dest: string, manifest: PullableManifest): Promise<void> {
  const path = join(dest, MANIFEST_FILE)
  const tmp = join(dest, PARTIAL_DIR, `${MANIFEST_FILE}.tmp`)
  await makeDir(dirname(tmp))
  const handle = await open(tmp, 'w')
  try {
    await handle.writeFile(`${JSON.stringify(manifest, null, 2)}\n`)
    await handle.sync()
  } finally {
    await handle.close()
  }
  await rename(tmp, path)
}

function urlOf(file: ModelFile): string {
  if (!file.url || !/^https?:\/\//i.test(file.url)) {
    throw new ModError('invalid_config', `${file.path} has no http(s) URL to download it from`)
  }
  return file.url
}

/** What a pull needs of a manifest: a CLIP preset's, or an add-on's such as the NudeNet detector's. */
export interface PullableManifest {
  id: string
  files: ModelFile[]
  variants?: Manifest['variants']
}

/**
 * Installs the manifest's files into destDir and writes its manifest.json (with the size and sha256 of every
 * file) last. Files already in place and matching are kept. Returns the installed manifest.
 */
export async function pullModel<M extends PullableManifest>(manifest: M, destDir: string, opts: PullOptions = {}): Promise<M> {
  const wanted = (opts.variants ?? []).map((name) => {
    const variant = manifest.variants?.[name]
    if (!variant) throw new ModError('invalid_config', `model ${manifest.id} offers no ${name} encoders`)
    return [name, variant] as const
  })
  const queue = [...manifest.files, ...wanted.flatMap(([, v]) => [v.image_encoder, v.text_encoder])]
  const urls = queue.map(urlOf)
  let agent: Agent | EnvHttpProxyAgent | undefined
  let dispatcher = opts.dispatcher
  if (!dispatcher) {
    agent = defaultDispatcher(opts.proxy, opts.idleMs ?? IDLE_MS)
    dispatcher = agent.compose(interceptors.redirect({maxRedirections: MAX_REDIRECTIONS}))
  }
  const ctx: Context = {dest: destDir, opts, dispatcher}
  await makeInstallFolder(destDir)
  try {
    return await withInstallLock(destDir, manifest.id, () => pullFiles(ctx, manifest, queue, urls))
  } catch (e) {
    // A folder mod may not write (a read-only image, another user's cache) is fine when the model is there whole.
    if (UNWRITABLE.has((e as NodeJS.ErrnoException).code ?? '')) {
      const installed = await installedAsIs(destDir, queue, opts)
      if (installed) return installed as M
    }
    throw localFailure(e, destDir)
  } finally {
    await agent?.close()
  }
}

/**
 * The installed manifest of a folder that already holds every file of `queue`, each matching the sha256 the preset
 * pins or else the one the installed manifest recorded (reported to `onFile` as kept); undefined otherwise.
 */
async function installedAsIs(destDir: string, queue: ModelFile[], opts: PullOptions): Promise<PullableManifest | undefined> {
  let installed: PullableManifest
  let recorded: Map<string, string | undefined>
  try {
    installed = JSON.parse(await readFile(join(destDir, MANIFEST_FILE), 'utf8')) as PullableManifest
    const variants = Object.values(installed.variants ?? {}).flatMap((v) => [v.image_encoder, v.text_encoder])
    recorded = new Map([...installed.files, ...variants].map((f) => [f.path, f.sha256]))
  } catch {
    // No manifest.json, or not one a pull writes: not installed.
    return undefined
  }
  const kept: PulledFile[] = []
  for (const file of queue) {
    const sha256 = file.sha256 ?? recorded.get(file.path)
    const verified = sha256 === undefined ? undefined : await installedCopy(join(destDir, file.path), {...file, sha256})
    if (!verified) return undefined
    kept.push({file: file.path, ...verified, skipped: true, pinned: file.sha256 !== undefined})
  }
  for (const f of kept) opts.onFile?.(f)
  return installed
}

/** pullModel's downloads and installed manifest, holding the folder's install lock. */
async function pullFiles<M extends PullableManifest>(ctx: Context, manifest: M, queue: ModelFile[], urls: string[]): Promise<M> {
  const {dest: destDir, opts} = ctx
  const installed = new Map<string, ModelFile>()
  const modelFiles = new Set(manifest.files.map((f) => f.path))
  let uninstalled = false
  for (const [i, file] of queue.entries()) {
    if (opts.signal?.aborted) throw failed('download was interrupted')
    let verified = await installedCopy(join(destDir, file.path), file)
    const skipped = verified !== undefined
    if (!verified) {
      // From the first of the model's own files that changes, the folder must stop counting as installed until it
      // is whole again. A variant's file does not: the model installed runs without it, and a pull of a variant
      // that fails or is stopped must leave that model as it was.
      if (!uninstalled && modelFiles.has(file.path)) {
        await rm(join(destDir, MANIFEST_FILE), {force: true})
        uninstalled = true
      }
      verified = await download(ctx, file, urls[i])
    }
    const pinned = file.sha256 !== undefined
    opts.onFile?.({file: file.path, size: verified.size, sha256: verified.sha256, skipped, pinned})
    installed.set(file.path, {...file, size: verified.size, sha256: verified.sha256, trust: pinned ? 'pinned' : 'first_use'})
  }
  const done = (f: ModelFile): ModelFile => installed.get(f.path) ?? f
  const result: M = {...manifest, files: manifest.files.map(done)}
  if (manifest.variants) {
    result.variants = Object.fromEntries(
      Object.entries(manifest.variants).map(([name, v]) => [name, {image_encoder: done(v.image_encoder), text_encoder: done(v.text_encoder)}]),
    )
  }
  await writeManifest(destDir, result)
  await rm(join(destDir, PARTIAL_DIR), {recursive: true, force: true})
  return result
}

/**
 * `mod models remove`: a model's folder under the cache, and what mod derived from its files elsewhere in the cache
 * (optimised graphs, signed int8 copies and their graphs, prompt embeddings), so that removing a model frees its
 * space. It holds the folder's install lock while it deletes: a pull or add in progress there is not cut short.
 */
import {lstat, readdir, readFile, readlink, rm, rmdir} from 'node:fs/promises'
import {dirname, join, relative, resolve, sep} from 'node:path'

import {withInstallLock} from './install-lock.js'
import {isModelId} from './manifest.js'
import {promptCachePath} from './prompt-cache.js'
import {cachedGraphs, cachePrefix} from './session.js'

/** What was removed: the folder, and the bytes freed there and in the derived caches. */
export interface RemovedModel {
  dir: string
  /** The installed model's id, when its manifest.json named one. */
  id?: string
  bytes: number
  /** Where the folder was a link: its target, which is kept (a folder of the user's, as MOD_MODEL_DIR is). */
  linkedTo?: string
}

/** Every file under `dir` with its size (links counted, not followed). */
async function filesUnder(dir: string): Promise<{path: string; size: number}[]> {
  const entries = await readdir(dir, {withFileTypes: true})
  const nested = await Promise.all(
    entries.map(async (e) => {
      const path = join(dir, e.name)
      return e.isDirectory() ? filesUnder(path) : [{path, size: (await lstat(path)).size}]
    }),
  )
  return nested.flat()
}

/** Bytes under `path` (a file or folder), 0 when it is not there. */
async function sizeOf(path: string): Promise<number> {
  const info = await lstat(path).catch(() => undefined)
  if (info === undefined) return 0
  return info.isDirectory() ? (await filesUnder(path)).reduce((sum, f) => sum + f.size, 0) : info.size
}

/** Whether `path` lies strictly below the folder `parent` (neither it, nor outside it). */
function isBelow(parent: string, path: string): boolean {
  const rel = relative(resolve(parent), resolve(path))
  return rel !== '' && rel !== '..' && !rel.startsWith(`..${sep}`) && !rel.startsWith(sep)
}

/**
 * The id the folder's manifest.json names, when it is a valid one. A folder being removed is often a broken one: a
 * manifest that is missing, does not parse or names no usable id (one that could lead out of `prompts/`) gives
 * none, and the folder is removed all the same.
 */
async function installedId(folder: string): Promise<string | undefined> {
  try {
    const id = (JSON.parse(await readFile(join(folder, 'manifest.json'), 'utf8')) as {id?: unknown} | null)?.id
    return isModelId(id) ? id : undefined
  } catch {
    return undefined
  }
}

/** Removes what the cache holds for the model file at `file`: its optimised graphs, and its signed int8 copies with theirs. */
async function removeDerived(file: string, cacheDir: string): Promise<number> {
  let freed = 0
  const int8 = join(cacheDir, 'int8')
  const prefix = cachePrefix(file)
  for (const name of (await readdir(int8).catch(() => [])).filter((n) => n.startsWith(prefix))) {
    const copy = join(int8, name)
    if (name.endsWith('.onnx')) freed += await graphsOf(copy, cacheDir)
    freed += await sizeOf(copy)
    await rm(copy, {force: true})
  }
  return freed + (await graphsOf(file, cacheDir))
}

/** Removes the optimised graphs of the model file at `file`; the bytes they held. */
async function graphsOf(file: string, cacheDir: string): Promise<number> {
  let bytes = 0
  for (const entry of await cachedGraphs(file, cacheDir)) {
    bytes += await sizeOf(entry)
    await rm(entry, {recursive: true, force: true})
  }
  return bytes
}

/**
 * Removes the model folder `dir` (a preset's or an add-on's under `cacheDir`; `what` names it when another process
 * is installing there) with what was derived from its files; undefined when there is no such folder. A link there
 * is removed, its target kept.
 */
export async function removeModel(dir: string, what: string, cacheDir: string): Promise<RemovedModel | undefined> {
  const folder = resolve(dir)
  const info = await lstat(folder).catch(() => undefined)
  if (info?.isSymbolicLink()) {
    const linkedTo = await readlink(folder)
    await rm(folder)
    return {dir: folder, bytes: 0, linkedTo}
  }
  if (!info?.isDirectory()) return undefined
  const removed = await withInstallLock(folder, what, async () => {
    const id = await installedId(folder)
    const files = (await filesUnder(folder)).filter((f) => !f.path.endsWith('.install.lock'))
    let bytes = files.reduce((sum, f) => sum + f.size, 0)
    for (const f of files.filter((f) => f.path.endsWith('.onnx'))) bytes += await removeDerived(f.path, cacheDir)
    const prompts = id === undefined ? undefined : dirname(promptCachePath(cacheDir, id))
    if (prompts !== undefined && isBelow(join(cacheDir, 'prompts'), prompts)) {
      bytes += await sizeOf(prompts)
      await rm(prompts, {recursive: true, force: true})
    }
    // The manifest first: from then on the folder no longer counts as installed, whatever is left if this stops.
    await rm(join(folder, 'manifest.json'), {force: true})
    for (const name of await readdir(folder)) if (name !== '.install.lock') await rm(join(folder, name), {recursive: true, force: true})
    return {dir: folder, ...(id === undefined ? {} : {id}), bytes}
  })
  // Emptied under the lock; a pull that took the folder since keeps it.
  await rmdir(folder).catch(() => undefined)
  return removed
}

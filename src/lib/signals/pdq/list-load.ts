import {createHash} from 'node:crypto'
import {readFile, stat} from 'node:fs/promises'

import {ModError} from '../../errors.js'
import {readListCache, fileSha256, writeListCache} from './list-cache.js'
import {listErrors, parseHashList, type HashList, type ListLineError} from './list-file.js'
import {buildMultiIndex, type MultiIndex} from './multi-index.js'

export interface LoadedList {
  /** The name matches report (the policy's key for the list, or the file's name). */
  name: string
  file: string
  list: HashList
  index: MultiIndex
  /** Where the entries came from: the binary cache, or the text (parsed and indexed). */
  from: 'cache' | 'text'
}

/**
 * Loads a hash list file: from its binary cache when that is current, else by parsing the text (a bad line
 * is `invalid_config` with its line number), indexing it and writing list and index to the cache for next time.
 */
export async function loadHashList(file: string, name: string, options: {writeCache?: boolean} = {}): Promise<LoadedList> {
  let info
  try {
    info = await stat(file)
  } catch {
    throw new ModError('invalid_config', `hash list ${file} does not exist`)
  }
  if (!info.isFile()) throw new ModError('invalid_config', `hash list ${file} is not a file`)
  const cached = await readListCache(file, info, () => fileSha256(file))
  if (cached) return {name, file, ...cached, from: 'cache'}
  const text = await readFile(file)
  const parsed = parseHashList(text)
  const error = listErrors(file, parsed.errors)
  if (error) throw error
  const {list} = parsed
  const index = buildMultiIndex(list)
  // The key of the bytes parsed, not of the file now: it may have changed since.
  const parsedKey = {size: text.length, mtimeMs: info.mtimeMs, sha256: createHash('sha256').update(text).digest()}
  if (options.writeCache !== false) await writeListCache(file, list, index, parsedKey)
  return {name, file, list, index, from: 'text'}
}

/** Parses a list file without caching or indexing it: its entry count and every bad line (for validation). */
export async function checkHashListFile(file: string): Promise<{count: number; errors: ListLineError[]}> {
  let text
  try {
    text = await readFile(file)
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code
    if (code === 'ENOENT') throw new ModError('invalid_config', `hash list ${file} does not exist`)
    if (code === 'EISDIR') throw new ModError('invalid_config', `hash list ${file} is not a file`)
    throw new ModError('invalid_config', `cannot read hash list ${file}: ${code === 'EACCES' ? 'permission denied' : (code ?? 'error')}`)
  }
  const {list, errors} = parseHashList(text)
  return {count: list.count, errors}
}

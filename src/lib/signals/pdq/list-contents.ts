import {createHash} from 'node:crypto'
import {closeSync, openSync, readSync} from 'node:fs'

import type {Policy} from '../../policy/types.js'
import {hashListsOf} from './policy-section.js'

/**
 * What each of the policy's hash lists holds now, by list name: the sha256 of its file's bytes, or `unreadable:
 * <code>` for a file that cannot be read (the list's own load reports that). A policy names its lists by path, and
 * a list edited in place keeps its path: this tells two servers' lists apart. Read synchronously, in 1 MiB pieces:
 * a server reads it once, as it starts (a list of a million hashes, 65 MB, takes about 0.2 s).
 */
export function hashListContents(policy: Policy): Record<string, string> {
  const contents: Record<string, string> = {}
  for (const list of hashListsOf(policy)) {
    let fd: number | undefined
    try {
      fd = openSync(list.file, 'r')
      const hash = createHash('sha256')
      const chunk = Buffer.allocUnsafe(1 << 20)
      for (let n = readSync(fd, chunk); n > 0; n = readSync(fd, chunk)) hash.update(chunk.subarray(0, n))
      contents[list.name] = hash.digest('hex')
    } catch (e) {
      contents[list.name] = `unreadable: ${(e as NodeJS.ErrnoException).code ?? 'error'}`
    } finally {
      if (fd !== undefined) closeSync(fd)
    }
  }
  return contents
}

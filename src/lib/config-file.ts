/** Reading a hand-written configuration file (a policy, a head, a word list) with a size bound. */
import {open, stat} from 'node:fs/promises'

import {ModError} from './errors.js'
import {formatSize} from './sizes.js'

/** Reads a configuration file as UTF-8 text, refusing one over maxBytes before reading it. */
export async function readConfigText(filePath: string, what: string, maxBytes: number): Promise<string> {
  let handle
  try {
    // Checked before opening: opening a FIFO would wait for a writer, in a thread nothing can interrupt.
    const stats = await stat(filePath)
    if (!stats.isFile()) throw new ModError('invalid_config', `the ${what} ${filePath} is not a file`)
    if (stats.size > maxBytes) throw new ModError('invalid_config', `the ${what} ${filePath} is larger than ${formatSize(maxBytes)}`)
    handle = await open(filePath, 'r')
    return await handle.readFile({encoding: 'utf8'})
  } catch (e) {
    if (e instanceof ModError) throw e
    const code = (e as NodeJS.ErrnoException).code
    const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : (e as Error).message
    throw new ModError('invalid_config', `cannot read the ${what} ${filePath}: ${why}`)
  } finally {
    await handle?.close()
  }
}

import {randomBytes} from 'node:crypto'
import {open, rm, stat} from 'node:fs/promises'

import {ModError} from '../lib/errors.js'

/**
 * Refuses, before any work, a file the command would write only at its end (`--out`, `--report`,
 * `--write-baseline`): a missing or read-only folder, or a path that is a folder, would otherwise fail once the
 * scoring or training is done, its result lost. Creates and removes a file beside it; the file itself is left as
 * it is.
 */
export async function checkWritable(flag: string, file: string): Promise<void> {
  const info = await stat(file).catch(() => undefined)
  if (info?.isDirectory()) throw new ModError('bad_request', `${flag} ${file}: is a folder; give a file name`)
  const probe = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
  try {
    await (await open(probe, 'wx')).close()
  } catch (e) {
    throw new ModError('bad_request', `${flag} ${file}: cannot write there (${(e as NodeJS.ErrnoException).code ?? 'error'})`)
  }
  await rm(probe, {force: true})
}

import {ModError} from '../lib/errors.js'
import {readCapped, readFileCapped} from '../lib/input/read-capped.js'

/** A list of a whole repository's paths fits; anything larger is not a file list. */
const MAX_LIST_BYTES = 64 * 1024 * 1024

/**
 * The paths of a file list (`--files-from FILE`, or `-` for stdin): one per line (a trailing `\r` is dropped), or
 * NUL-separated with `nul` (what `git diff --name-only -z` and `find -print0` write, for names holding newlines).
 * Empty entries are left out. A listed `-` is a file of that name, never stdin.
 */
export async function readFileList(from: string, nul: boolean, stdin: NodeJS.ReadableStream): Promise<string[]> {
  const name = from === '-' ? 'stdin' : from
  let bytes: Buffer
  try {
    bytes = from === '-' ? await readCapped(stdin as AsyncIterable<Buffer>, MAX_LIST_BYTES, name) : await readFileCapped(from, MAX_LIST_BYTES)
  } catch (e) {
    if (e instanceof ModError) throw new ModError('invalid_config', `the file list ${name}: ${e.message}`)
    const code = (e as NodeJS.ErrnoException).code
    throw new ModError(code === 'ENOENT' ? 'not_found' : 'invalid_config', `cannot read the file list ${name}: ${code === 'ENOENT' ? 'it does not exist' : (code ?? String(e))}`)
  }
  const text = bytes.toString('utf8')
  const entries = nul ? text.split('\0') : text.split('\n').map((l) => l.replace(/\r$/, ''))
  return entries.filter((p) => p !== '').map((p) => (p === '-' ? './-' : p))
}

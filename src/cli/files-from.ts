import {ModError} from '../lib/errors.js'
import {readCapped, readFileCapped} from '../lib/input/read-capped.js'

/** A list of a whole repository's paths fits; anything larger is not a file list. */
const MAX_LIST_BYTES = 64 * 1024 * 1024
const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf])

/**
 * The paths of a file list (`--files-from FILE`, or `-` for stdin): one per line (a trailing `\r` is dropped), or
 * NUL-separated with `nul` (what `git diff --name-only -z` and `find -print0` write, for names holding newlines).
 * Empty entries and a leading byte order mark are left out. A listed `-` is a file of that name, never stdin. A path whose bytes are not UTF-8 is
 * kept as those bytes.
 */
export async function readFileList(from: string, nul: boolean, stdin: NodeJS.ReadableStream): Promise<(string | Buffer)[]> {
  const name = from === '-' ? 'stdin' : from
  let bytes: Buffer
  try {
    bytes = from === '-' ? await readCapped(stdin as AsyncIterable<Buffer>, MAX_LIST_BYTES, name) : await readFileCapped(from, MAX_LIST_BYTES)
  } catch (e) {
    if (e instanceof ModError) throw new ModError('invalid_config', `the file list ${name}: ${e.message}`)
    const code = (e as NodeJS.ErrnoException).code
    throw new ModError(code === 'ENOENT' ? 'not_found' : 'invalid_config', `cannot read the file list ${name}: ${code === 'ENOENT' ? 'it does not exist' : (code ?? String(e))}`)
  }
  // A byte order mark before the first path (a Windows tool's UTF-8) is no part of it.
  const body = bytes.subarray(0, 3).equals(UTF8_BOM) ? bytes.subarray(3) : bytes
  const entries = split(body, nul ? 0 : 0x0a).map((e) => (!nul && e.at(-1) === 0x0d ? e.subarray(0, -1) : e))
  return entries
    .filter((e) => e.length > 0)
    .map((e) => {
      const p = e.toString('utf8')
      // A name that is not UTF-8 keeps its bytes: decoded, it would name a file that does not exist.
      if (!Buffer.from(p).equals(e)) return e
      return p === '-' ? './-' : p
    })
}

function split(bytes: Buffer, separator: number): Buffer[] {
  const parts: Buffer[] = []
  let start = 0
  for (let i = bytes.indexOf(separator); i !== -1; i = bytes.indexOf(separator, start)) {
    parts.push(bytes.subarray(start, i))
    start = i + 1
  }
  parts.push(bytes.subarray(start))
  return parts
}

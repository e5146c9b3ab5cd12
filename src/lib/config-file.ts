/** Reading a hand-written configuration file (a policy, a head, a word list) with a size bound. */
import {open, stat} from 'node:fs/promises'

import {whyUnreadable} from './errno.js'
import {ModError} from './errors.js'
import {readCapped} from './input/read-capped.js'
import {formatSize} from './sizes.js'

/**
 * The bytes as UTF-8 text, or an error saying what they are instead: UTF-16 (Windows PowerShell 5's `>`, Notepad's
 * "Unicode") or another encoding, whose bytes would otherwise become replacement characters in prompts and words.
 */
export function utf8Text(bytes: Buffer, filePath: string, what: string): string {
  if (hasUtf16Mark(bytes)) {
    throw new ModError('invalid_config', `the ${what} ${filePath} is UTF-16 text: save it as UTF-8`)
  }
  // UTF-8 allows a NUL, but no text file holds one: UTF-16 without its byte order mark (`Out-File -Encoding
  // unicode` of some tools, a "UTF-16 LE" editor setting) reads as valid UTF-8 with a NUL after every letter.
  const nul = bytes.indexOf(0)
  if (nul !== -1) {
    const why = looksUtf16(bytes) ? 'is UTF-16 text without a byte order mark: save it as UTF-8' : `holds a NUL byte (line ${lineOf(bytes, nul)}): it is not text`
    throw new ModError('invalid_config', `the ${what} ${filePath} ${why}`)
  }
  try {
    return new TextDecoder('utf-8', {fatal: true}).decode(bytes)
  } catch {
    throw new ModError('invalid_config', `the ${what} ${filePath} is not UTF-8 text (line ${firstBadLine(bytes)}): save it as UTF-8`)
  }
}

/** Whether the bytes start with a UTF-16 byte order mark, little- or big-endian. */
export const hasUtf16Mark = (bytes: Uint8Array): boolean => (bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff)

/** Whether most bytes at odd places, or most at even places, are NUL: the ASCII letters of UTF-16 text. */
export function looksUtf16(bytes: Buffer): boolean {
  const head = bytes.subarray(0, 4096)
  const nuls = [0, 0]
  head.forEach((b, i) => {
    if (b === 0) nuls[i % 2] += 1
  })
  return Math.max(...nuls) >= head.length / 4
}

/** The number (from 1) of the line that holds byte `offset`. */
function lineOf(bytes: Buffer, offset: number): number {
  let line = 1
  for (let i = bytes.indexOf(0x0a); i !== -1 && i < offset; i = bytes.indexOf(0x0a, i + 1)) line++
  return line
}

/** The number (from 1) of the first line that is not UTF-8. */
function firstBadLine(bytes: Buffer): number {
  const strict = new TextDecoder('utf-8', {fatal: true})
  let start = 0
  for (let line = 1; ; line++) {
    const end = bytes.indexOf(0x0a, start)
    try {
      strict.decode(bytes.subarray(start, end === -1 ? bytes.length : end))
    } catch {
      return line
    }
    if (end === -1) return line
    start = end + 1
  }
}

/** A configuration file's text read from a stream (stdin), at most `maxBytes`, as readConfigText reads a file; `name` stands for its path in messages. */
export async function readConfigStream(stream: AsyncIterable<Buffer | string>, name: string, what: string, maxBytes: number): Promise<string> {
  const bytes = await readCapped(stream, maxBytes, name, () => new ModError('invalid_config', `the ${what} ${name} is larger than ${formatSize(maxBytes)}`))
  return utf8Text(bytes, name, what)
}

/** Reads a configuration file as UTF-8 text, refusing one over maxBytes before reading it. */
export async function readConfigText(filePath: string, what: string, maxBytes: number): Promise<string> {
  let handle
  try {
    // Checked before opening: opening a FIFO would wait for a writer, in a thread nothing can interrupt.
    const stats = await stat(filePath)
    if (!stats.isFile()) throw new ModError('invalid_config', `the ${what} ${filePath} is not a file`)
    if (stats.size > maxBytes) throw new ModError('invalid_config', `the ${what} ${filePath} is larger than ${formatSize(maxBytes)}`)
    handle = await open(filePath, 'r')
    return utf8Text(await handle.readFile(), filePath, what)
  } catch (e) {
    if (e instanceof ModError) throw e
    const why = (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : whyUnreadable(e)
    throw new ModError('invalid_config', `cannot read the ${what} ${filePath}: ${why}`)
  } finally {
    await handle?.close()
  }
}

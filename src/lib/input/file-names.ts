/** File names that are not UTF-8, as the file system takes them and as results and messages show them. */
import {join, sep} from 'node:path'

/** A path as the file system takes it: a string, or bytes for a name that is not UTF-8. */
export type FsPath = string | Buffer

// ignoreBOM: a name may hold U+FEFF anywhere, which the decoder would otherwise drop as a byte order mark.
const strictUtf8 = new TextDecoder('utf-8', {fatal: true, ignoreBOM: true})

/**
 * A file name as results and messages show it: as it is when it is UTF-8; otherwise each byte that is not part of
 * a UTF-8 character is written `\xNN` (a Latin-1 `café.png` is `caf\xe9.png`), so the name stays readable and
 * nothing but the escape is lost.
 */
export function namedAs(bytes: Buffer): string {
  let out = ''
  for (let i = 0; i < bytes.length; ) {
    let taken = 0
    // A character is 1 to 4 bytes: the shortest run that decodes is the next character.
    for (let n = 1; n <= 4 && i + n <= bytes.length && taken === 0; n++) {
      try {
        out += strictUtf8.decode(bytes.subarray(i, i + n))
        taken = n
      } catch {}
    }
    if (taken === 0) {
      out += `\\x${bytes[i].toString(16).padStart(2, '0')}`
      taken = 1
    }
    i += taken
  }
  return out
}

/** The path of `name` inside the folder at `dir`; `raw`: the name's bytes where they are not UTF-8. */
export function inside(dir: FsPath, name: string, raw?: Buffer): FsPath {
  if (typeof dir === 'string' && raw === undefined) return join(dir, name)
  const base = typeof dir === 'string' ? Buffer.from(join(dir, sep)) : Buffer.concat([dir, Buffer.from(sep)])
  return Buffer.concat([base, raw ?? Buffer.from(name)])
}

/** A name read as bytes: as shown (namedAs), and its bytes where they are not UTF-8 (a string would name another file). */
export function readName(raw: Buffer): {name: string; raw?: Buffer} {
  const name = namedAs(raw)
  return name === raw.toString('utf8') && Buffer.from(name).equals(raw) ? {name} : {name, raw}
}

/** The bytes a name shown by namedAs stands for: each `\xNN` escape one byte, the rest UTF-8. */
export function namedBytes(shown: string): Buffer {
  const parts = shown.split(/\\x([0-9a-f]{2})/)
  return Buffer.concat(parts.map((part, i) => (i % 2 === 1 ? Buffer.from([parseInt(part, 16)]) : Buffer.from(part))))
}

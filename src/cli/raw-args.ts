import {readFileSync} from 'node:fs'

/**
 * Node.js decodes the command line as UTF-8, turning each byte that is not part of a UTF-8 character into U+FFFD:
 * a file named in Latin-1 (`caf\xe9.png`) would be looked for under a name that does not exist. Where the system
 * keeps the command line's bytes (Linux: /proc/self/cmdline), such an argument is given back as those bytes.
 * `args` are the paths as the command parsed them; the others are returned as they are.
 */
export function withRawBytes(args: readonly string[], argv: readonly string[] = process.argv, cmdline = '/proc/self/cmdline'): (string | Buffer)[] {
  if (!args.some((a) => a.includes('\uFFFD'))) return [...args]
  const user = argv.slice(2)
  let raw: Buffer[]
  try {
    const bytes = readFileSync(cmdline)
    const all: Buffer[] = []
    for (let start = 0, i = bytes.indexOf(0); i !== -1; start = i + 1, i = bytes.indexOf(0, start)) all.push(bytes.subarray(start, i))
    // Node's own options come before the script; the command's arguments are the last ones, in order.
    raw = all.slice(-user.length)
  } catch {
    return [...args]
  }
  if (raw.length !== user.length) return [...args]
  return args.map((a) => {
    if (!a.includes('\uFFFD')) return a
    const i = user.indexOf(a)
    return i !== -1 && raw[i].toString('utf8') === a ? raw[i] : a
  })
}

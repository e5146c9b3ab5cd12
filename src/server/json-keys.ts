/**
 * The first name an object of a JSON text gives twice, if any. JSON.parse keeps the last one, silently (RFC 8259
 * leaves it to each parser): a gateway or an audit log in front of the server that reads the first would check a
 * different image from the one scored. Run on text that JSON.parse accepted; strings are skipped with indexOf, so
 * a body of one long base64 string costs little more than finding its end.
 */
export function duplicateKey(text: string): string | undefined {
  // One entry per open container: the names an object gave so far, or null for an array.
  const open: (Set<string> | null)[] = []
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (c === '{') open.push(new Set())
    else if (c === '[') open.push(null)
    else if (c === '}' || c === ']') open.pop()
    else if (c === '"') {
      const end = stringEnd(text, i)
      const names = open.at(-1)
      if (names && followedByColon(text, end + 1)) {
        const name = JSON.parse(text.slice(i, end + 1)) as string
        if (names.has(name)) return name
        names.add(name)
      }
      i = end
    }
  }
  return undefined
}

/** The index of the quote that closes the string opening at `start` (one not escaped by an odd run of backslashes). */
function stringEnd(text: string, start: number): number {
  let end = text.indexOf('"', start + 1)
  for (;;) {
    let slashes = 0
    while (text[end - 1 - slashes] === '\\') slashes++
    if (slashes % 2 === 0) return end
    end = text.indexOf('"', end + 1)
  }
}

/** Whether the next character from `at` that is not JSON whitespace is a colon: the string before it is a name. */
function followedByColon(text: string, at: number): boolean {
  let k = at
  while (text[k] === ' ' || text[k] === '\t' || text[k] === '\n' || text[k] === '\r') k++
  return text[k] === ':'
}

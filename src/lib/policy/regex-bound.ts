/**
 * A bound on the time a policy's regular expression may take: the text it runs on is read from images, so
 * whoever uploads an image chooses it. JavaScript's engine backtracks, and a group that repeats while holding a
 * repetition of variable length or an alternation (`(a+)+`, `(a|a)*`, `(?:\w+\s?)*`) can take time exponential
 * in the length of a line: `(a+)+$` spends half a minute on 28 letters. Such patterns are refused; every other
 * pattern costs at most a polynomial of the line's length, and a line read is short.
 *
 * The check reads the source of a pattern that already compiles in Unicode mode, so every `{` is a quantifier
 * or part of an escape, and classes do not nest.
 */

interface Group {
  start: number
  /** A `|`, or a quantifier whose counts may differ (`*`, `+`, `?`, `{n,m}`), anywhere inside. */
  ambiguous: boolean
}

/** Where the escape starting at `i` (a backslash) ends, exclusive. */
function escapeEnd(source: string, i: number): number {
  const next = source[i + 1]
  const open = source[i + 2]
  if ('pPu'.includes(next) && open === '{') return source.indexOf('}', i) + 1
  if (next === 'k' && open === '<') return source.indexOf('>', i) + 1
  return i + 2
}

/** Where the class starting at `i` (`[`) ends, exclusive. */
function classEnd(source: string, i: number): number {
  let j = i + 1
  while (j < source.length && source[j] !== ']') j = source[j] === '\\' ? escapeEnd(source, j) : j + 1
  return j + 1
}

/** The quantifier at `i`, if any: its counts and where it ends (a lazy `?` included). */
function quantifier(source: string, i: number): {min: number; max: number; end: number} | undefined {
  const c = source[i]
  let q: {min: number; max: number; end: number} | undefined
  if (c === '*') q = {min: 0, max: Infinity, end: i + 1}
  else if (c === '+') q = {min: 1, max: Infinity, end: i + 1}
  else if (c === '?') q = {min: 0, max: 1, end: i + 1}
  else if (c === '{') {
    const m = /^\{(\d+)(,(\d*))?\}/.exec(source.slice(i))
    if (!m) return undefined
    const min = Number(m[1])
    q = {min, max: m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3]), end: i + m[0].length}
  }
  if (q && source[q.end] === '?') q.end++
  return q
}

/** Why `source` may backtrack exponentially (the offending group named), or undefined when it cannot. */
export function backtrackingProblem(source: string): string | undefined {
  const stack: Group[] = [{start: 0, ambiguous: false}]
  let closed: Group | undefined
  let i = 0
  while (i < source.length) {
    const c = source[i]
    const q = quantifier(source, i)
    if (q) {
      if (closed && q.max > 1 && closed.ambiguous) {
        const group = source.slice(closed.start, q.end)
        return `the repeated group ${group} holds a repetition or an alternation, which can take exponential time on some text; write it without the nesting`
      }
      if (q.min !== q.max) stack[stack.length - 1].ambiguous = true
      closed = undefined
      i = q.end
      continue
    }
    closed = undefined
    if (c === '\\') i = escapeEnd(source, i)
    else if (c === '[') i = classEnd(source, i)
    else if (c === '(') {
      stack.push({start: i, ambiguous: false})
      // The `?` of `(?:`, `(?=`, `(?<name>` is no quantifier.
      i += source[i + 1] === '?' ? 2 : 1
    } else if (c === ')') {
      const group = stack.pop()!
      const parent = stack[stack.length - 1]
      parent.ambiguous ||= group.ambiguous
      closed = group
      i++
    } else {
      if (c === '|') stack[stack.length - 1].ambiguous = true
      i++
    }
  }
  return undefined
}

/**
 * `npx tsx bench/text-rules.ts`: what a text rule costs on hostile text. A line read is at most 160 characters
 * (the recogniser reads 1 280 pixels of a line and gives a symbol per 8). For each pattern below, the time to
 * match 20 lines of 160 and of 2 000 characters made to hurt it, on re2js (what `mod` runs; after a warm-up
 * run) and, for the two patterns of the original report, on JavaScript's own RegExp (a backtracking engine) on
 * a single line of 30 characters (the eight terms take it 46 s on 40). Then the built-in contact detectors
 * (JavaScript RegExps written to stay polynomial) on hostile lines of the same lengths. Prints milliseconds per
 * 20 lines (the median of 5 runs) beside the load average. Not part of `npm run bench`: no target, a record of the bound.
 */
import {findContacts} from '../src/lib/rules/contact.js'
import {compilePattern, MAX_PROGRAM_SIZE, patternMatches} from '../src/lib/rules/regex.js'
import {load} from './lib.js'

const SIX = String.raw`\d+[\s.,-]*\d+[\s.,-]*\d+[\s.,-]*\d+[\s.,-]*\d+[\s.,-]*\d+\s*(?:btc|usdt|eth)`
const EIGHT = String.raw`\d+[\s.,-]*\d+[\s.,-]*\d+[\s.,-]*\d+[\s.,-]*\d+[\s.,-]*\d+[\s.,-]*\d+[\s.,-]*\d+\s*(?:btc|usdt|eth)`
const fill = (unit: string, n: number, end = '') => unit.repeat(Math.ceil(n / unit.length)).slice(0, n - end.length) + end

const CASES: {pattern: string; line: (n: number) => string; native?: boolean}[] = [
  {pattern: SIX, line: (n) => fill('1', n), native: true},
  {pattern: EIGHT, line: (n) => fill('1', n), native: true},
  {pattern: SIX, line: (n) => fill('1 ', n)},
  {pattern: '(a+)+$', line: (n) => fill('a', n, '!')},
  {pattern: '(a|aa)*b', line: (n) => fill('a', n)},
  {pattern: '(.*a){12}x', line: (n) => fill('a', n)},
  {pattern: `(?:${Array.from({length: 60}, (_, i) => 'a'.repeat(i + 1)).join('|')})*b`, line: (n) => fill('a', n)},
  {pattern: `[a-z]{${MAX_PROGRAM_SIZE - 2}}`, line: (n) => fill('ab', n)},
  {pattern: `(?:[a-z]{1,9}\\s?){1,45}!`, line: (n) => fill('abcdefgh ', n)},
]

function once(run: () => void): number {
  const start = performance.now()
  run()
  return performance.now() - start
}

/** The median of 5 runs: the machine is shared, and one run can be off by a factor of ten. */
function time(run: () => void): number {
  const runs = Array.from({length: 5}, () => once(run)).sort((a, b) => a - b)
  return runs[2]
}

console.log(`load average ${load()}`)
console.log('pattern (program size) | re2js, 20 x 160 chars | re2js, 20 x 2 000 chars | RegExp, one line of 30 chars')
for (const c of CASES) {
  const p = compilePattern(c.pattern)
  patternMatches(p, c.line(160))
  const on = (n: number) =>
    time(() => {
      for (let i = 0; i < 20; i++) patternMatches(p, c.line(n))
    })
  const backtracking = new RegExp(c.pattern, 'giu')
  const native = c.native
    ? once(() => {
        ;[...c.line(30).matchAll(backtracking)]
      }).toFixed(0)
    : '-'
  console.log(`${c.pattern.slice(0, 40)} (${p.programSize()}) | ${on(160).toFixed(1)} ms | ${on(2000).toFixed(0)} ms | ${native} ms`)
}
console.log('contact detectors (all four), hostile line | 20 x 160 chars | 20 x 2 000 chars')
for (const [name, unit] of [['letters', 'a'], ['dotted', 'a.'], ['e-mail tail', 'b.'], ['digit groups', '1-'], ['www', 'www.a']] as const) {
  const on = (n: number) =>
    time(() => {
      for (let i = 0; i < 20; i++) findContacts(fill(unit, n), ['email', 'phone', 'url', 'handle'])
    })
  console.log(`${name} | ${on(160).toFixed(1)} ms | ${on(2000).toFixed(0)} ms`)
}

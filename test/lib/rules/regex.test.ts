import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {applyRules, compileRules} from '../../../src/lib/rules/match.js'
import {compilePattern, MAX_PROGRAM_SIZE, patternMatches, patternProblem} from '../../../src/lib/rules/regex.js'
import type {RuleLine} from '../../../src/lib/rules/types.js'

const box = {x: 1, y: 2, width: 3, height: 4}
/** 20 lines of `text` stacked far apart (one block each), as an image full of it would be read. */
const page = (text: string): RuleLine[] => Array.from({length: 20}, (_, i) => ({text, confidence: 0.9, box: {x: 0, y: i * 100, width: 2000, height: 20}}))
const hitsOn = (pattern: string, lines: RuleLine[]) => applyRules(compileRules([{name: 'r', category: 'c', patterns: [pattern]}]), lines)

const SIX_TERMS = String.raw`\d+[\s.,-]*\d+[\s.,-]*\d+[\s.,-]*\d+[\s.,-]*\d+[\s.,-]*\d+\s*(?:btc|usdt|eth)`
const EIGHT_TERMS = String.raw`\d+[\s.,-]*\d+[\s.,-]*\d+[\s.,-]*\d+[\s.,-]*\d+[\s.,-]*\d+[\s.,-]*\d+[\s.,-]*\d+\s*(?:btc|usdt|eth)`
const LONG_ALTERNATION = `(?:${Array.from({length: 60}, (_, i) => 'a'.repeat(i + 1)).join('|')})*b`

/**
 * Patterns that take a backtracking engine exponential or high-polynomial time on the lines beside them (each
 * 2 000 characters, 20 lines): the first two froze a worker for 23 s and 43 s on images of 46-digit lines. The
 * engine matches each in one pass: the test finishing is the check (the test runner stops a file after 4
 * minutes; a backtracking engine would take longer than the universe has on most of these).
 */
const HOSTILE: [string, string, number][] = [
  [SIX_TERMS, '1'.repeat(2000), 0],
  [SIX_TERMS, '1 '.repeat(1000), 0],
  [EIGHT_TERMS, '1.'.repeat(1000), 0],
  ['(a+)+$', `${'a'.repeat(1999)}!`, 0],
  ['(a|aa)*b', 'a'.repeat(2000), 0],
  ['(.*a){12}', 'a'.repeat(2000), 20],
  ['(.*a){12}x', 'a'.repeat(2000), 0],
  ['(?:\\w+\\s?)*x', 'ab '.repeat(666), 0],
  ['(?:[a-z0-9-]+\\.)+com', 'a.'.repeat(1000), 0],
  [LONG_ALTERNATION, 'a'.repeat(2000), 0],
  ['((a*)*|b)*c', 'a'.repeat(2000), 0],
  ['(?:a{1,10}){1,10}$', `${'a'.repeat(1999)}!`, 0],
  ['a{300}', 'a'.repeat(2000), 120],
]

test('hostile patterns are accepted and match 20 lines of 2 000 characters in one pass each', () => {
  for (const [pattern, text, count] of HOSTILE) {
    assert.is(patternProblem(pattern), undefined, pattern)
    assert.ok(compilePattern(pattern).programSize() <= MAX_PROGRAM_SIZE, pattern)
    assert.is(hitsOn(pattern, page(text)).length, count, pattern)
  }
})

test('the hostile patterns still find what they are for', () => {
  assert.equal(
    hitsOn(SIX_TERMS, [{text: 'win 10 20 30 40 50 60 BTC now', box}]).map((h) => h.text),
    ['10 20 30 40 50 60 BTC'],
  )
  assert.equal(patternMatches(compilePattern('(a|aa)*b'), 'xaaab'), [{start: 1, end: 5}])
})

test('a pattern is refused past MAX_PROGRAM_SIZE compiled instructions, and counted repetition past 1 000 (nested: counts multiplied) by RE2', () => {
  assert.match(patternProblem('a{1000}') ?? '', /^compiles to 1002 instructions, more than the 1000 allowed/)
  assert.match(patternProblem('(?:ab|cd){500}') ?? '', /^compiles to 2502 instructions/)
  assert.match(patternProblem('(?:a{1,30}){1,30}$') ?? '', /^compiles to 1802 instructions/)
  assert.is(patternProblem('a{1001}'), 'is not a valid regular expression (RE2 syntax): invalid repeat count: `{1001}`')
  assert.is(patternProblem('(a{1000}){1000}'), 'is not a valid regular expression (RE2 syntax): invalid repeat count: `{1000}`')
})

test('matching is case-insensitive over Unicode, on code points, with Unicode classes', () => {
  const all = (pattern: string, text: string) => patternMatches(compilePattern(pattern), text).map((m) => text.slice(m.start, m.end))
  assert.equal(all('straße', 'STRASSE Straße STRAẞE'), ['Straße', 'STRAẞE'])
  assert.equal(all('é+', 'ÉÉé'), ['ÉÉé'])
  assert.equal(all('σ', 'Σς'), ['Σ', 'ς'])
  assert.equal(all('\\p{L}{2,}', '😀 ab élan 日本'), ['ab', 'élan', '日本'])
  assert.equal(all('\\x{1F600}+', 'x😀😀y'), ['😀😀'])
  assert.equal(all('^.$', '😀'), ['😀'])
})

test('RE2 syntax is accepted as written; what it leaves out is refused by name', () => {
  for (const ok of [
    '\\bbc1[a-z0-9]{25,59}\\b',
    '(?:\\d{3}-)+\\d{4}',
    'free (?:crypto|bitcoin) giveaway',
    '(?:ab)+c*',
    '\\(a+\\)+',
    '[(a+)]+',
    '[\\](a+]+',
    '\\p{L}{2,}',
    '(?<name>x)',
    '(?P<name>x)',
    '[[:alpha:]]+',
    '\\pL',
    '\\Qa.b\\E',
    '(?s).',
    '(?:cat|dog)+',
    '(a+)+$',
  ]) {
    assert.is(patternProblem(ok), undefined, ok)
  }
  const linear = 'which RE2 syntax leaves out so that matching takes time linear in the text'
  assert.is(patternProblem('(?=a)'), `uses lookahead or lookbehind (\`(?=\`), ${linear}`)
  assert.is(patternProblem('b(?<!a)'), `uses lookahead or lookbehind (\`(?<!\`), ${linear}`)
  assert.is(patternProblem('(a)\\2'), `uses a backreference (\`\\2\`), ${linear}`)
  assert.is(patternProblem('a(b'), 'is not a valid regular expression (RE2 syntax): missing closing ): `a(b`')
})

test.run()

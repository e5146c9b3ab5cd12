import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {backtrackingProblem} from '../../../src/lib/policy/regex-bound.js'

const refused = (group: string) =>
  `the repeated group ${group} holds a repetition or an alternation, which can take exponential time on some text; write it without the nesting`

test('a group repeated while holding a repetition of variable length or an alternation is refused, named as written', () => {
  assert.is(backtrackingProblem('(a+)+$'), refused('(a+)+'))
  assert.is(backtrackingProblem('^(a|a)*$'), refused('(a|a)*'))
  assert.is(backtrackingProblem('(?:\\w+\\s?)*x'), refused('(?:\\w+\\s?)*'))
  assert.is(backtrackingProblem('(?:[a-z0-9-]+\\.)+com'), refused('(?:[a-z0-9-]+\\.)+'))
  assert.is(backtrackingProblem('x((ab)*c){2,}'), refused('((ab)*c){2,}'))
  assert.is(backtrackingProblem('(?:a?){3}'), refused('(?:a?){3}'))
  assert.is(backtrackingProblem('((?:a|b)c)+?'), refused('((?:a|b)c)+?'))
})

test('fixed counts, single repetitions, optional groups and look-alikes in escapes and classes pass', () => {
  for (const source of [
    '\\bbc1[a-z0-9]{25,59}\\b',
    '(?:\\d{3}-)+\\d{4}',
    '(?:cat|dog) food',
    '(?:ab)+c*',
    '(a+)?b',
    '\\(a+\\)+',
    '[(a+)]+',
    '[\\](a+]+',
    '\\p{L}{2,}',
    '\\u{1F600}+',
    '(?<name>x)\\k<name>+',
    '(?<=a+)b',
    'free (?:crypto|bitcoin) giveaway',
  ]) {
    assert.is(backtrackingProblem(source), undefined, source)
  }
})

test.run()

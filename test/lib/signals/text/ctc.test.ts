import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {ctcDecode, symbolsFromKeys} from '../../../../src/lib/signals/text/ctc.js'

test('the symbols are the dictionary lines, then the space', () => {
  assert.equal(symbolsFromKeys('a\nb\r\nc\n'), ['a', 'b', 'c', ' '])
})

test('collapses repeats, drops blanks, keeps a letter repeated across a blank, and averages kept probabilities', () => {
  const symbols = ['a', 'b', ' ']
  // classes: blank, a, b, space; steps: a a blank a b space b
  const steps = [1, 1, 0, 1, 2, 3, 2]
  const probs = new Float32Array(steps.length * 4)
  steps.forEach((c, t) => {
    probs.fill(0.01, t * 4, t * 4 + 4)
    probs[t * 4 + c] = c === 2 ? 0.5 : 0.7
  })
  const [line] = ctcDecode(probs, 1, steps.length, 4, symbols)
  assert.is(line.text, 'aab b')
  // (0.7 × 3 + 0.5 × 2) / 5
  assert.is(Math.round(line.confidence * 1000) / 1000, 0.62)
})

test('puts a space between words where the space had a share of a gap the blank won', () => {
  // classes: blank, a, b, space; steps: a blank(space 0.3) b blank(space 0.02) a
  const rows = [
    [0.05, 0.9, 0.03, 0.02],
    [0.6, 0.05, 0.05, 0.3],
    [0.05, 0.03, 0.9, 0.02],
    [0.9, 0.04, 0.04, 0.02],
    [0.05, 0.9, 0.03, 0.02],
  ]
  const [line] = ctcDecode(Float32Array.from(rows.flat()), 1, rows.length, 4, ['a', 'b', ' '])
  assert.is(line.text, 'a ba')
})

test('a sequence of blanks is an empty line with confidence 0', () => {
  const probs = Float32Array.from([0.9, 0.1, 0.9, 0.1])
  assert.equal(ctcDecode(probs, 1, 2, 2, ['a', ' ']), [{text: '', confidence: 0}])
})

test.run()

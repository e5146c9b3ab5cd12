import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {codesEvidence} from '../../../src/lib/signals/codes/evidence.js'
import {nudenetEvidence} from '../../../src/lib/signals/nudenet/evidence.js'
import {iou, onceEach} from '../../../src/lib/signals/overlap.js'
import {textEvidence} from '../../../src/lib/signals/text/evidence.js'

test('iou: the shared area over the area of either', () => {
  assert.is(iou([0, 0, 10, 10], [0, 0, 10, 10]), 1)
  assert.is(iou([0, 0, 10, 10], [5, 0, 10, 10]), 50 / 150)
  assert.is(iou([0, 0, 10, 10], [10, 0, 10, 10]), 0)
})

test('onceEach: a finding the same as one before it, at the same place, is left out; elsewhere, or another one, is kept', () => {
  const found = [
    {name: 'a', box: [0, 0, 100, 40]},
    {name: 'a', box: [2, 1, 100, 40]},
    {name: 'a', box: [0, 200, 100, 40]},
    {name: 'b', box: [0, 0, 100, 40]},
  ]
  assert.equal(
    onceEach(found, (x, y) => x.name === y.name),
    [found[0], found[2], found[3]],
  )
})

test("an image's evidence lists what its frames (or its two views, onto white and black) both found once", () => {
  const region = {label: 'BUTTOCKS_COVERED', score: 0.8, box: [10, 10, 50, 50]}
  const regions = nudenetEvidence.image([[region], [{...region, score: 0.7, box: [11, 10, 50, 50]}, {...region, label: 'BELLY_EXPOSED'}]]).regions
  assert.equal(regions, [region, {...region, label: 'BELLY_EXPOSED'}])

  const line = {text: 'deals@example.org', confidence: 0.9, box: [0, 0, 200, 20]}
  const hit = {rule: 'contacts', category: 'spam', text: 'deals@example.org', box: [0, 0, 200, 20]}
  const text = textEvidence.image([
    {lines: [line], hits: [hit], truncated: false},
    {lines: [{...line, confidence: 0.8}, {...line, box: [0, 100, 200, 20]}], hits: [hit], truncated: false},
  ])
  assert.equal([text.text, text.text_hits], [[line, {...line, box: [0, 100, 200, 20]}], [hit]])

  const code = {format: 'qr_code' as const, payload: 'https://example.org', box: [5, 5, 80, 80]}
  const codeHit = {rule: 'links', category: 'spam', format: 'qr_code' as const, payload: 'https://example.org', box: [5, 5, 80, 80]}
  const codes = codesEvidence.image([
    {codes: [code], hits: [codeHit]},
    {codes: [code], hits: [codeHit]},
  ])
  assert.equal([codes.codes, codes.code_hits], [[code], [codeHit]])
})

test.run()

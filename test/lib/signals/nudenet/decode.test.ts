import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {decodeNudenet} from '../../../../src/lib/signals/nudenet/decode.js'
import {NUDENET_ANCHORS, NUDENET_LABELS, NUDENET_ROW} from '../../../../src/lib/signals/nudenet/labels.js'

/** A [22, 2100] output with the given candidates (centre x, centre y, width, height in input pixels; class scores). */
function output(candidates: {at: number; box: [number, number, number, number]; scores: Partial<Record<(typeof NUDENET_LABELS)[number], number>>}[]): Float32Array {
  const n = NUDENET_ANCHORS
  const out = new Float32Array(NUDENET_ROW * n)
  for (const c of candidates) {
    c.box.forEach((v, k) => (out[k * n + c.at] = v))
    for (const [label, s] of Object.entries(c.scores)) out[(4 + NUDENET_LABELS.indexOf(label as (typeof NUDENET_LABELS)[number])) * n + c.at] = s
  }
  return out
}

test('a candidate takes its best class; boxes scale from the 320 square to the padded frame\'s longer side', () => {
  // A 640 x 320 frame: padded to 640 x 640, so input pixels are 2 frame pixels.
  const d = decodeNudenet(output([{at: 5, box: [100, 50, 40, 20], scores: {FACE_FEMALE: 0.3, FEET_EXPOSED: 0.6}}]), 640, 320)
  assert.equal(d, [{label: 'FEET_EXPOSED', score: Math.fround(0.6), box: [160, 80, 80, 40]}])
})

test('boxes are clipped to the frame and truncated to whole pixels', () => {
  // A 100 x 50 frame: scale 100 / 320; the box runs past the right edge and starts above the top.
  const d = decodeNudenet(output([{at: 0, box: [300, 10, 80, 40], scores: {BELLY_EXPOSED: 0.9}}]), 100, 50)
  // x = (300 - 40) * 0.3125 = 81.25, y = max(0, (10 - 20) * 0.3125) = 0, w = min(25, 100 - 81.25), h = min(12.5, 50).
  assert.equal(d[0].box, [81, 0, 18, 12])
})

test('scores at 0.25 or below are dropped, as the package\'s NMS score threshold does', () => {
  const d = decodeNudenet(
    output([
      {at: 1, box: [50, 50, 10, 10], scores: {ANUS_EXPOSED: 0.25}},
      {at: 2, box: [150, 150, 10, 10], scores: {ANUS_EXPOSED: 0.22}},
      {at: 3, box: [250, 250, 10, 10], scores: {ANUS_EXPOSED: 0.26}},
    ]),
    320,
    320,
  )
  assert.equal(d.map((x) => x.box), [[245, 245, 10, 10]])
})

test('overlapping boxes keep the best, across classes; IoU at or under 0.45 keeps both', () => {
  const d = decodeNudenet(
    output([
      {at: 10, box: [100, 100, 40, 40], scores: {FEMALE_BREAST_EXPOSED: 0.5}},
      {at: 11, box: [104, 100, 40, 40], scores: {FEMALE_BREAST_COVERED: 0.7}},
      // IoU with the kept box: 20 x 40 overlap of 40 x 40 boxes = 800 / 2400 = 0.33.
      {at: 12, box: [124, 100, 40, 40], scores: {BELLY_EXPOSED: 0.4}},
    ]),
    320,
    320,
  )
  assert.equal(d.map((x) => x.label), ['FEMALE_BREAST_COVERED', 'BELLY_EXPOSED'])
})

test('equal scores keep the output\'s order', () => {
  const d = decodeNudenet(
    output([
      {at: 7, box: [100, 100, 40, 40], scores: {FACE_MALE: 0.5}},
      {at: 3, box: [101, 100, 40, 40], scores: {FACE_FEMALE: 0.5}},
    ]),
    320,
    320,
  )
  assert.equal(d.map((x) => x.label), ['FACE_FEMALE'])
})

test.run()

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {hashListEvidence, type HashListMatch} from '../../../src/lib/signals/pdq/evidence.js'
import {textEvidence, type FrameText} from '../../../src/lib/signals/text/evidence.js'
import {createSegmentTracker, type FrameLabel} from '../../../src/lib/video/segments.js'

/** The text signal's evidence kind, as the engine opens it for a policy that reads the text of videos. */
const TEXT = [{name: 'text', kind: textEvidence}]
/** A frame's evidence: what the text signal read in it. */
const read = (text: FrameText) => new Map([['text', text]])

const weapons = (score: number): FrameLabel => ({name: 'weapons', parent: 'violence', threshold: 0.5, score})
const nudity = (score: number): FrameLabel => ({name: 'nudity', parent: null, threshold: 0.7, score})

function track(frames: FrameLabel[][], {fps = 1, minFrames = 1} = {}) {
  const tracker = createSegmentTracker(fps, minFrames)
  const closedDuring = frames.map((labels) => tracker.push(labels))
  return {tracker, closedDuring}
}

test('a run of frames at or over the threshold is one segment from its first frame to its last plus 1/fps', () => {
  const {tracker} = track([[weapons(0.2)], [weapons(0.5)], [weapons(0.9)], [weapons(0.6)], [weapons(0.1)], [weapons(0.3)]])
  assert.equal(tracker.finish(6).violations, [
    {
      name: 'weapons',
      parent: 'violence',
      threshold: 0.5,
      max_confidence: 0.9,
      segments: [{start: 1, end: 4, frames: 3, max_confidence: 0.9}],
    },
  ])
})

test('open() shows the runs still open that min_frames keeps, ending after the last frame, and leaves them open', () => {
  const {tracker} = track([[weapons(0.1)], [weapons(0.9)], [nudity(0.8), weapons(0.6)]], {minFrames: 2})
  // The weapons run has 2 frames; the nudity one 1, which min_frames would drop.
  assert.equal(tracker.open(), [{label: 'weapons', segment: {start: 1, end: 3, frames: 2, max_confidence: 0.9}}])
  assert.equal(tracker.push([weapons(0.7), nudity(0.1)]), [])
  assert.equal(tracker.open(), [{label: 'weapons', segment: {start: 1, end: 4, frames: 3, max_confidence: 0.9}}])
  assert.equal(tracker.push([weapons(0.2)]).map((f) => f.segment), [{start: 1, end: 4, frames: 3, max_confidence: 0.9}])
  assert.equal(tracker.open(), [])
})

test('separate runs make separate segments; the label keeps the highest confidence of its segments', () => {
  const {tracker} = track([[weapons(0.6)], [weapons(0.1)], [weapons(0.8)], [weapons(0.7)]], {fps: 2})
  assert.equal(tracker.finish(2).violations[0], {
    name: 'weapons',
    parent: 'violence',
    threshold: 0.5,
    max_confidence: 0.8,
    segments: [
      {start: 0, end: 0.5, frames: 1, max_confidence: 0.6},
      {start: 1, end: 2, frames: 2, max_confidence: 0.8},
    ],
  })
})

test('a label with 500,000 segments (a long video) gets its highest confidence without overflowing the stack', () => {
  const tracker = createSegmentTracker(1, 1)
  const n = 500_000
  for (let i = 0; i < n; i++) {
    tracker.push([weapons(i === 1234 ? 0.95 : 0.6)])
    tracker.push([weapons(0.1)])
  }
  const [violation] = tracker.finish(2 * n).violations
  assert.is(violation.segments.length, n)
  assert.is(violation.max_confidence, 0.95)
})

test('a run still open at the end is capped at the duration', () => {
  const {tracker} = track([[weapons(0.1)], [weapons(0.1)], [weapons(0.9)]])
  assert.equal(tracker.finish(2.48).violations[0].segments, [{start: 2, end: 2.48, frames: 1, max_confidence: 0.9}])
})

test('runs shorter than min_frames are dropped, and a label left without segments is no violation', () => {
  const frames = [[weapons(0.9), nudity(0.9)], [weapons(0.9), nudity(0.1)], [weapons(0.1), nudity(0.9)], [weapons(0.9), nudity(0.1)]]
  const {tracker} = track(frames, {minFrames: 2})
  assert.equal(tracker.finish(4).violations, [
    {name: 'weapons', parent: 'violence', threshold: 0.5, max_confidence: 0.9, segments: [{start: 0, end: 2, frames: 2, max_confidence: 0.9}]},
  ])
})

test('each label has its own threshold and segments; violations are sorted by confidence', () => {
  const frames = [[weapons(0.55), nudity(0.69)], [weapons(0.55), nudity(0.95)], [weapons(0.1), nudity(0.95)]]
  const {tracker} = track(frames)
  assert.equal(tracker.finish(3).violations, [
    {name: 'nudity', parent: null, threshold: 0.7, max_confidence: 0.95, segments: [{start: 1, end: 3, frames: 2, max_confidence: 0.95}]},
    {name: 'weapons', parent: 'violence', threshold: 0.5, max_confidence: 0.55, segments: [{start: 0, end: 2, frames: 2, max_confidence: 0.55}]},
  ])
})

test('rounds times to 3 decimals and confidences to 4', () => {
  const {tracker} = track([[weapons(0.1)], [weapons(0.876543)], [weapons(0.1)]], {fps: 3})
  assert.equal(tracker.finish(1).violations[0].segments, [{start: 0.333, end: 0.667, frames: 1, max_confidence: 0.8765}])
})

test('push returns a kept segment when its run closes, and finish returns the runs still open', () => {
  const {tracker, closedDuring} = track([[weapons(0.9)], [weapons(0.9)], [weapons(0.1)], [weapons(0.9)], [weapons(0.1)], [weapons(0.8)]], {
    minFrames: 2,
  })
  assert.equal(closedDuring, [[], [], [{label: 'weapons', segment: {start: 0, end: 2, frames: 2, max_confidence: 0.9}}], [], [], []])
  assert.equal(tracker.finish(6).closed, [])
  const open = createSegmentTracker(1, 1)
  open.push([weapons(0.7)])
  assert.equal(open.finish(1).closed, [{label: 'weapons', segment: {start: 0, end: 1, frames: 1, max_confidence: 0.7}}])
})

test('hasSegment turns true once a run reaches min_frames, even while it is open', () => {
  const tracker = createSegmentTracker(1, 2)
  tracker.push([weapons(0.9)])
  assert.is(tracker.hasSegment(), false)
  tracker.push([weapons(0.9)])
  assert.is(tracker.hasSegment(), true)
  tracker.push([weapons(0.1)])
  assert.is(tracker.hasSegment(), true)
})

test("frames that carry their text: a segment lists its frames' lines and its label's hits, each once, with the first box", () => {
  const tracker = createSegmentTracker(1, 1, TEXT)
  const contact = (score: number): FrameLabel => ({name: 'contact_info', parent: null, threshold: 0.5, score})
  const line = (text: string, x: number) => ({text, confidence: 0.9, box: [x, 10, 200, 30]})
  const hit = (rule: string, category: string, text: string, x: number) => ({rule, category, text, box: [x, 10, 200, 30], detector: 'email'})
  const frames: [FrameLabel[], FrameText][] = [
    // Reading stopped early in the first frame only, before the segments: they say it did not in theirs.
    [[contact(0), weapons(0.1)], {lines: [line('sale today', 5)], hits: [], truncated: true}],
    [[contact(1), weapons(0.9)], {lines: [line('mail me@x.org', 5), line('sale today', 5)], hits: [hit('contacts', 'contact_info', 'me@x.org', 5)], truncated: false}],
    [[contact(1), weapons(0.9)], {lines: [line('mail me@x.org', 7)], hits: [hit('contacts', 'contact_info', 'me@x.org', 7)], truncated: false}],
    [[contact(0), weapons(0.1)], {lines: [], hits: [], truncated: false}],
  ]
  for (const [labels, text] of frames) tracker.push(labels, read(text))
  const segments = Object.fromEntries(tracker.finish(4).violations.map((v) => [v.name, v.segments]))
  const lines = [line('mail me@x.org', 5), line('sale today', 5)]
  assert.equal(segments, {
    contact_info: [{start: 1, end: 3, frames: 2, max_confidence: 1, text: lines, text_hits: [hit('contacts', 'contact_info', 'me@x.org', 5)], text_truncated: false}],
    weapons: [{start: 1, end: 3, frames: 2, max_confidence: 0.9, text: lines, text_hits: [], text_truncated: false}],
  })
})

test('a segment says text_truncated when reading stopped early in one of its frames', () => {
  const tracker = createSegmentTracker(1, 1, TEXT)
  tracker.push([weapons(0.9)], read({lines: [], hits: [], truncated: false}))
  tracker.push([weapons(0.9)], read({lines: [], hits: [], truncated: true}))
  tracker.push([weapons(0.1)], read({lines: [], hits: [], truncated: false}))
  assert.equal(
    tracker.finish(3).violations.map((v) => v.segments.map((s) => s.text_truncated)),
    [[true]],
  )
})

test('a video without scores over any threshold has no violations', () => {
  const {tracker} = track([[weapons(0.49), nudity(0.69)]])
  assert.equal(tracker.finish(1), {closed: [], violations: []})
})


test("a segment lists its frames' hash-list matches: each entry once, at its nearest distance and the first frame at it", () => {
  const known: FrameLabel = {name: 'known_bad', parent: null, threshold: 0.5, score: 0}
  const m = (label: string, distance: number) => ({list: 'removals', label, note: '', distance, category: 'known_bad'})
  const tracker = createSegmentTracker(2, 1, [{name: 'pdq', kind: hashListEvidence}])
  const frames: [number, HashListMatch[] | undefined][] = [
    [0.5, [m('case-1', 30)]],
    [0.8, [m('case-1', 12), m('case-2', 20)]],
    [0.8, [m('case-1', 12)]],
    [0, undefined],
    [0.9, [m('case-1', 4)]],
  ]
  for (const [score, matches] of frames) tracker.push([{...known, score}], new Map(matches ? [['pdq', matches]] : []))
  assert.equal(
    tracker.finish(2.5).violations[0].segments.map((s) => s.matches),
    [
      [
        {list: 'removals', label: 'case-1', note: '', distance: 12, at: 0.5},
        {list: 'removals', label: 'case-2', note: '', distance: 20, at: 0.5},
      ],
      [{list: 'removals', label: 'case-1', note: '', distance: 4, at: 2}],
    ],
  )
})

test("an instant of several streams' frames violates a label when any frame does, at the highest score, with the matches of those frames only", () => {
  const known: FrameLabel = {name: 'known_bad', parent: null, threshold: 0.5, score: 0}
  const m = (label: string, distance: number) => new Map([['pdq', [{list: 'removals', label, note: '', distance, category: 'known_bad'}]]])
  const tracker = createSegmentTracker(1, 1, [{name: 'pdq', kind: hashListEvidence}])
  tracker.pushInstant([{labels: [{...known, score: 0.1}]}, {labels: [{...known, score: 0.1}]}])
  // The first stream's frame is under the threshold: its match is not the segment's.
  tracker.pushInstant([{labels: [{...known, score: 0.2}], evidence: m('case-1', 2)}, {labels: [{...known, score: 0.8}], evidence: m('case-2', 9)}])
  tracker.pushInstant([{labels: [{...known, score: 0.9}]}, {labels: [{...known, score: 0.6}]}])
  tracker.pushInstant([{labels: [{...known, score: 0.3}]}])
  assert.equal(tracker.finish(4).violations[0].segments, [
    {start: 1, end: 3, frames: 2, max_confidence: 0.9, matches: [{list: 'removals', label: 'case-2', note: '', distance: 9, at: 1}]},
  ])
})

test('a segment of frames without hash-list matches has no matches field', () => {
  const {tracker} = track([[weapons(0.9)]])
  assert.not.ok('matches' in tracker.finish(1).violations[0].segments[0])
})

test.run()

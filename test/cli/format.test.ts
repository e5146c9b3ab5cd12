// The table line of a video segment names what flagged it: a text rule, or the nearest hash-list entry.
import chalk from 'chalk'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {formatVideo} from '../../src/cli/format.js'
import type {VideoResult} from '../../src/lib/types.js'

test('a segment flagged by a text rule names the rule and the text matched; one without hits names none', () => {
  const hit = {rule: 'contacts', category: 'contact_info', text: 'rentals@lakeside.org', box: [30, 150, 400, 40], detector: 'email'}
  const result: VideoResult = {
    source: 'sign.mp4',
    is_safe: false,
    duration: 4,
    fps: 1,
    frames_analyzed: 4,
    stopped_early: false,
    not_evaluated: [],
    violations: [
      {name: 'contact_info', parent: null, threshold: 0.5, max_confidence: 1, segments: [{start: 1, end: 3, frames: 2, max_confidence: 1, text: [], text_hits: [hit]}]},
      {name: 'weapons', parent: 'violence', threshold: 0.5, max_confidence: 0.8, segments: [{start: 0, end: 1, frames: 1, max_confidence: 0.8, text: [], text_hits: []}]},
    ],
  }
  const lines = formatVideo(result).split('\n').slice(1)
  assert.equal(lines, [
    '  contact_info     0:01.0-0:03.0  2 frames, max 1.00 >= 0.5 (text rule contacts: "rentals@lakeside.org")',
    '  weapons          0:00.0-0:01.0  1 frame, max 0.80 >= 0.5',
  ])
})

test('scan-video lines: a segment that matched a hash list names its nearest entry, its distance and when', () => {
  chalk.level = 0
  const result: VideoResult = {
    source: 'clip.mp4',
    is_safe: false,
    duration: 20,
    fps: 2,
    frames_analyzed: 40,
    stopped_early: false,
    not_evaluated: [],
    violations: [
      {
        name: 'known_bad',
        parent: null,
        threshold: 0.5,
        max_confidence: 0.9375,
        segments: [
          {start: 12, end: 14, frames: 4, max_confidence: 0.9375, matches: [{list: 'removals', label: 'case-7', note: '', distance: 4, at: 12.5}]},
          {start: 16, end: 17, frames: 2, max_confidence: 0.6},
        ],
      },
    ],
  }
  assert.equal(formatVideo(result).split('\n'), [
    'UNSAFE  clip.mp4  (20.0 s, 40 frames at 2 fps)',
    '  known_bad        0:12.0-0:14.0  4 frames, max 0.94 >= 0.5 (list removals: "case-7", distance 4 at 0:12.5)',
    '  known_bad        0:16.0-0:17.0  2 frames, max 0.60 >= 0.5',
  ])
})

test.run()

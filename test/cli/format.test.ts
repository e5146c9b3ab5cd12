import chalk from 'chalk'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {formatVideo} from '../../src/cli/format.js'
import type {VideoResult} from '../../src/lib/types.js'

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
  assert.equal(formatVideo(result, 3).split('\n'), [
    'UNSAFE  clip.mp4  (20.0 s, 40 frames at 2 fps)',
    '  known_bad        0:12.0-0:14.0  4 frames, max 0.94 >= 0.5 (list removals: "case-7", distance 4 at 0:12.5)',
    '  known_bad        0:16.0-0:17.0  2 frames, max 0.60 >= 0.5',
  ])
})

test.run()

// The table line of a video segment names the text rule behind it, as an image's row does.
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
  const lines = formatVideo(result, 2).split('\n').slice(1)
  assert.equal(lines, [
    '  contact_info     0:01.0-0:03.0  2 frames, max 1.00 >= 0.5 (text rule contacts: "rentals@lakeside.org")',
    '  weapons          0:00.0-0:01.0  1 frames, max 0.80 >= 0.5',
  ])
})

test.run()

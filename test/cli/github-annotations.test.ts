// `--format github` against GitHub's own limit: a step shows 10 annotations of each kind, the rest only in its log.
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import type {ItemResult} from '../../src/lib/engine.js'
import {githubReporter} from '../../src/cli/reports/github.js'
import type {ReportItem} from '../../src/cli/reports/report.js'

const run = {categories: [], version: '0', cwd: '/repo', root: '/repo'}

const unreadable = (i: number): ReportItem => ({item: {source: `bad${i}.png`, error: {code: 'unsupported_media', message: 'not an image'}}, accepted: false})
// A safe animation whose pictures were not all scored: a warning, no error.
const partial = (i: number): ReportItem => ({item: {source: `anim${i}.webp`, is_safe: true, violations: [], animation_truncated: true} as unknown as ItemResult, accepted: false})

function report(items: ReportItem[], summary: string): string[] {
  const reporter = githubReporter(run)
  return (reporter.start() + items.map((i) => reporter.item(i)).join('') + reporter.end(summary)).trimEnd().split('\n')
}

test('past 10 errors or 10 warnings, every annotation is still printed and the closing notice says how many GitHub does not show', () => {
  const lines = report([...Array.from({length: 13}, (_, i) => unreadable(i)), ...Array.from({length: 11}, (_, i) => partial(i))], '24 scanned')
  assert.is(lines.filter((l) => l.startsWith('::error ')).length, 13)
  assert.is(lines.filter((l) => l.startsWith('::warning ')).length, 11)
  assert.is(
    lines.at(-1),
    "::notice title=mod scan::24 scanned; GitHub shows the first 10 error annotations of a step: 3 more flagged or unreadable files are in this step's log" +
      "; GitHub shows the first 10 warning annotations of a step: 1 more animation not checked whole is in this step's log",
  )
})

test('10 of each kind are all shown: the notice is the summary alone', () => {
  const lines = report([...Array.from({length: 10}, (_, i) => unreadable(i)), ...Array.from({length: 10}, (_, i) => partial(i))], '20 scanned')
  assert.is(lines.at(-1), '::notice title=mod scan::20 scanned')
})

test.run()

import {readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {openJournal} from '../../src/cli/remote/journal.js'
import {tempDir} from '../helpers/cli.js'

const dir = tempDir('mod-journal-')
const POLICY = 'a'.repeat(64)
const result = (source: string) => ({source, is_safe: true, violations: [], labels: [], not_evaluated: []})

test.after(() => dir.remove())

test('a new journal starts with its policy line; entries come back for the same bytes only', async () => {
  const path = join(dir.path, 'new.ndjson')
  const first = await openJournal(path, POLICY)
  assert.is(first.size, 0)
  await first.add([{sha256: '1'.repeat(64), result: result('a.png')}])
  const again = await openJournal(path, POLICY)
  assert.is(again.size, 1)
  assert.equal(again.done('a.png', '1'.repeat(64)), result('a.png'))
  assert.is(again.done('a.png', '2'.repeat(64)), undefined, 'the file changed since: scored again')
  assert.is(again.done('b.png', '1'.repeat(64)), undefined)
})

test('a line cut off by a killed run is dropped, and the next entry starts on a line of its own', async () => {
  const path = join(dir.path, 'cut.ndjson')
  writeFileSync(path, `${JSON.stringify({mod_resume: 1, policy_sha256: POLICY})}\n${JSON.stringify({sha256: '1'.repeat(64), result: result('a.png')})}\n{"sha256":"22`)
  const j = await openJournal(path, POLICY)
  assert.is(j.size, 1)
  await j.add([{sha256: '3'.repeat(64), result: result('c.png')}])
  const reopened = await openJournal(path, POLICY)
  assert.is(reopened.size, 2)
  assert.ok(reopened.done('c.png', '3'.repeat(64)))
  assert.is(readFileSync(path, 'utf8').split('\n').length, 5, 'header, a, the cut line, c, and the final newline')
})

test('a file that is not a journal, or one of another policy, is refused', async () => {
  const other = join(dir.path, 'other.txt')
  writeFileSync(other, 'hello\n')
  try {
    await openJournal(other, POLICY)
    assert.unreachable()
  } catch (e) {
    assert.match((e as Error).message, /is not a journal of mod scan --server/)
  }
  const path = join(dir.path, 'new.ndjson')
  try {
    await openJournal(path, 'b'.repeat(64))
    assert.unreachable()
  } catch (e) {
    assert.match((e as Error).message, /was written under another policy \(sha256 aaaaaaaaaaaa; the server's is bbbbbbbbbbbb\)/)
  }
})

test.run()

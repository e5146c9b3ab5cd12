import {readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {openJournal} from '../../src/cli/remote/journal.js'
import {tempDir} from '../helpers/cli.js'

const dir = tempDir('mod-journal-')
const POLICY = 'a'.repeat(64)
const KEY = 'the-journal-key'
const result = (source: string) => ({source, is_safe: true, violations: [], labels: [], not_evaluated: []})
const flagged = (source: string) => ({
  source,
  is_safe: false,
  violations: [{name: 'redness', confidence: 0.97, parent: null, threshold: 0.5}],
  labels: [{name: 'redness', score: 0.97, threshold: 0.5, parent: null, violated: true, origin: 'custom' as const}],
  not_evaluated: [],
})

test.after(() => dir.remove())

/** A journal at `name` holding one flagged image, written by mod under KEY. */
async function honest(name: string): Promise<string> {
  const path = join(dir.path, name)
  await (await openJournal(path, POLICY, KEY)).add([{sha256: '1'.repeat(64), result: flagged('a.png')}])
  return path
}

async function refusal(path: string, key = KEY): Promise<string> {
  try {
    await openJournal(path, POLICY, key)
  } catch (e) {
    return (e as Error).message
  }
  return assert.unreachable('the journal was accepted') as never
}

test('a new journal starts with its policy line; entries come back for the same bytes only', async () => {
  const path = join(dir.path, 'new.ndjson')
  const first = await openJournal(path, POLICY, KEY)
  assert.is(first.size, 0)
  await first.add([{sha256: '1'.repeat(64), result: result('a.png')}])
  const again = await openJournal(path, POLICY, KEY)
  assert.is(again.size, 1)
  assert.equal(again.done('a.png', '1'.repeat(64)), result('a.png'))
  assert.is(again.done('a.png', '2'.repeat(64)), undefined, 'the file changed since: scored again')
  assert.is(again.done('b.png', '1'.repeat(64)), undefined)
})

test('a line cut off by a killed run is dropped, and the next entry starts on a line of its own', async () => {
  const path = await honest('cut.ndjson')
  writeFileSync(path, `${readFileSync(path, 'utf8')}{"sha256":"22`)
  const j = await openJournal(path, POLICY, KEY)
  assert.is(j.size, 1)
  await j.add([{sha256: '3'.repeat(64), result: result('c.png')}])
  const reopened = await openJournal(path, POLICY, KEY)
  assert.is(reopened.size, 2)
  assert.ok(reopened.done('c.png', '3'.repeat(64)))
  assert.is(readFileSync(path, 'utf8').split('\n').length, 5, 'header, a, the cut line, c, and the final newline')
})

test('a file that is not a journal, or one of another policy, is refused', async () => {
  const other = join(dir.path, 'other.txt')
  writeFileSync(other, 'hello\n')
  assert.match(await refusal(other), /is not a journal of mod scan --server/)
  const path = join(dir.path, 'new.ndjson')
  try {
    await openJournal(path, 'b'.repeat(64), KEY)
    assert.unreachable()
  } catch (e) {
    assert.match((e as Error).message, /was written under another policy \(sha256 aaaaaaaaaaaa; the server's is bbbbbbbbbbbb\)/)
  }
})

test('forged: a line added by hand with is_safe true for a file is refused, whatever its fields', async () => {
  const path = await honest('forged.ndjson')
  const text = readFileSync(path, 'utf8')
  // What an attacker who read the format writes: the file's hash and a clean verdict, with or without a signature.
  for (const hmac of [undefined, '0'.repeat(64), JSON.parse(text.split('\n')[1]).hmac]) {
    writeFileSync(path, `${text}${JSON.stringify({sha256: '9'.repeat(64), result: result('b.png'), ...(hmac ? {hmac} : {})})}\n`)
    assert.match(await refusal(path), /^--resume \S+forged\.ndjson line 3 was not written by mod under this key \(edited, or added by someone else\)/)
  }
})

test('edited: a verdict, a score or the hash changed in a line mod wrote is refused', async () => {
  const path = await honest('edited.ndjson')
  const text = readFileSync(path, 'utf8')
  const edits: [string, string][] = [
    ['"is_safe":false', '"is_safe":true'],
    ['"violations":[{"name":"redness","confidence":0.97,"parent":null,"threshold":0.5}]', '"violations":[]'],
    ['"score":0.97', '"score":0.07'],
    ['1111111111', '2222222222'],
  ]
  for (const [from, to] of edits) {
    assert.ok(text.includes(from), from)
    writeFileSync(path, text.replace(from, to))
    assert.match(await refusal(path), /line 2 was not written by mod under this key/, to)
  }
  writeFileSync(path, text)
  assert.is((await openJournal(path, POLICY, KEY)).size, 1, 'the untouched journal still opens')
})

test('foreign: a journal written under another key is refused by its first line; an unsigned older journal too', async () => {
  const path = await honest('foreign.ndjson')
  assert.match(await refusal(path, 'another-key'), /was signed under another key \(MOD_JOURNAL_KEY, or the API key when that is unset\): its verdicts cannot be trusted/)
  // Its first line copied from a journal of this key does not help: each entry is signed too.
  const mine = readFileSync(await honest('mine.ndjson'), 'utf8').split('\n')[0]
  const theirs = join(dir.path, 'theirs.ndjson')
  const other = await openJournal(theirs, POLICY, 'another-key')
  await other.add([{sha256: '9'.repeat(64), result: result('b.png')}])
  writeFileSync(theirs, [mine, ...readFileSync(theirs, 'utf8').split('\n').slice(1)].join('\n'))
  assert.match(await refusal(theirs), /line 2 was not written by mod under this key/)
  const old = join(dir.path, 'old.ndjson')
  writeFileSync(old, `${JSON.stringify({mod_resume: 1, policy_sha256: POLICY})}\n${JSON.stringify({sha256: '9'.repeat(64), result: result('b.png')})}\n`)
  assert.match(await refusal(old), /was written by an older mod, without signatures: remove it to start over/)
})

test.run()

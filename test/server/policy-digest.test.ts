import {rmSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {buildPolicy, loadPolicyFile} from '../../src/lib/config/policy.js'
import {policyDigest} from '../../src/server/policy-digest.js'
import {tempDir} from '../helpers/cli.js'

const dir = tempDir()
test.after(() => dir.remove())

test('the policy digest is the same for the same policy and changes with a threshold, a prompt or a text rule', () => {
  const redness = (over: Record<string, unknown> = {}) => buildPolicy({categories: [{name: 'redness', prompts: ['red'], ...over}]})
  const digest = policyDigest(redness())
  assert.match(digest, /^[0-9a-f]{64}$/)
  assert.is(policyDigest(redness()), digest)
  assert.is.not(policyDigest(redness({threshold: 0.6})), digest)
  assert.is.not(policyDigest(redness({prompts: ['red', 'crimson']})), digest)
  assert.is.not(policyDigest(buildPolicy()), digest)
  const words = (w: string) => buildPolicy({categories: [], text: {rules: [{name: 'banned', category: 'hate_symbols', words: [w]}]}})
  assert.is.not(policyDigest(words('a')), policyDigest(words('b')))
})

test('a hash list counts by what its file holds, not by its path alone: a list edited in place changes the digest', async () => {
  const list = join(dir.path, 'banned.txt')
  const policyFile = join(dir.path, 'policy.yaml')
  writeFileSync(policyFile, 'categories: {}\nhash_lists:\n  banned:\n    file: banned.txt\n')
  // A new Policy each time, as a server starting again reads it.
  const digestWith = async (lines: string): Promise<string> => {
    writeFileSync(list, lines)
    return policyDigest((await loadPolicyFile(policyFile)).policy)
  }
  const one = `${'ab'.repeat(32)},case-1\n`
  const two = `${one}${'cd'.repeat(32)},case-2\n`
  const first = await digestWith(one)
  assert.match(first, /^[0-9a-f]{64}$/)
  assert.is(await digestWith(one), first)
  const edited = await digestWith(two)
  assert.is.not(edited, first)
  assert.is(await digestWith(one), first)
  // A list gone since the policy was read still gives a digest (its load says what is wrong), not the same one.
  const policy = (await loadPolicyFile(policyFile)).policy
  rmSync(list)
  assert.not.ok([first, edited].includes(policyDigest(policy)))
})

test.run()

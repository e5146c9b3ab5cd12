import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {buildPolicy} from '../../src/lib/config/policy.js'
import {policyDigest} from '../../src/server/policy-digest.js'

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

test.run()

import {createHash} from 'node:crypto'

import type {Policy} from '../lib/policy/types.js'

const digests = new WeakMap<Policy, string>()

/** JSON has no spelling for these: a pattern, a map or a set is written as its source, entries or values. */
function plain(_key: string, value: unknown): unknown {
  if (value instanceof RegExp) return value.toString()
  if (value instanceof Map) return [...value.entries()]
  if (value instanceof Set) return [...value.values()]
  return value
}

/**
 * The sha256 of the policy in force, as JSON: a client tells two servers' policies apart by it (a fleet must
 * agree; a resumed run must not mix verdicts of two policies). Computed once per policy.
 */
export function policyDigest(policy: Policy): string {
  let digest = digests.get(policy)
  if (digest === undefined) {
    digest = createHash('sha256').update(JSON.stringify(policy, plain)).digest('hex')
    digests.set(policy, digest)
  }
  return digest
}

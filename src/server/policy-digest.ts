import {createHash} from 'node:crypto'

import type {Policy} from '../lib/policy/types.js'
import {hashListContents} from '../lib/signals/pdq/list-contents.js'
import type {RouteContext} from './context.js'

const digests = new WeakMap<Policy, string>()

/** JSON has no spelling for these: a pattern, a map or a set is written as its source, entries or values. */
function plain(_key: string, value: unknown): unknown {
  if (value instanceof RegExp) return value.toString()
  if (value instanceof Map) return [...value.entries()]
  if (value instanceof Set) return [...value.values()]
  return value
}

/**
 * The sha256 of the policy in force, as JSON, with what its hash lists' files hold (their paths alone would not
 * tell a list edited in place): a client tells two servers' policies apart by it (a fleet must agree; a resumed run
 * must not mix verdicts of two policies). Computed once per policy, the lists read then: buildServer asks for it
 * as the server starts. A policy without hash lists has the digest of its JSON alone, as before lists counted.
 */
export function policyDigest(policy: Policy): string {
  let digest = digests.get(policy)
  if (digest === undefined) {
    const hash = createHash('sha256').update(JSON.stringify(policy, plain))
    const lists = hashListContents(policy)
    if (Object.keys(lists).length > 0) hash.update(JSON.stringify(lists))
    digest = hash.digest('hex')
    digests.set(policy, digest)
  }
  return digest
}

/**
 * The header every moderation answer carries: the sha256 of the policy its verdict was made under, as GET /health
 * states it. Behind a balancer, the servers answering one client's run can differ (a deploy half done); the client
 * tells a verdict of another policy by it, where /health, asked once, could not.
 */
export const POLICY_HEADER = {
  'X-Mod-Policy-Sha256': {
    description: 'The sha256 of the policy this verdict was made under (`policy.sha256` of `GET /health`): the servers behind a balancer can differ.',
    schema: {type: 'string', pattern: '^[0-9a-f]{64}$'},
  },
}

/** The value of POLICY_HEADER for an answer of this server. */
export function policyHeader(ctx: RouteContext): {'X-Mod-Policy-Sha256': string} {
  return {'X-Mod-Policy-Sha256': policyDigest(ctx.engine.policy)}
}

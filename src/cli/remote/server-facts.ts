import {DEFAULT_LIMITS} from '../../lib/config/settings.js'
import {MAX_POLICY_BYTES} from '../../lib/policy/load.js'
import type {PresetName} from '../../lib/policy/types.js'
import type {CategoryListing} from '../../lib/types.js'
import {visible} from '../visible.js'
import {categoriesResult, healthResult} from './answers.js'
import type {Client} from './client.js'

/**
 * A category listing repeats the server's policy file (at most MAX_POLICY_BYTES) with JSON around it; /health is a
 * few KiB: answers larger than these are not the server's.
 */
const LISTING_BYTES = 8 * MAX_POLICY_BYTES
const HEALTH_BYTES = 1024 * 1024

/** What the server tells before the first image: what `mod scan` needs to read, score and state coverage. */
export interface RemoteFacts {
  version: string
  preset: PresetName
  model: string
  policySha256?: string
  maxBatch: number
  maxBytes: number
  maxBatchBytes: number
}

/** The server as a run knows it once it has asked. */
export interface ServerState {
  facts: RemoteFacts
  /** The policy's categories (coverage counts these alone). */
  categories: CategoryListing[]
  /** Labels a result can hold: the policy's categories and a trained head's. */
  labels: number
  /** Everything listed, a head's labels included. */
  listed: CategoryListing[]
}

/**
 * Asks the server what it scores with (its categories first: /health is public, so a wrong key shows there) and
 * prints the one line that names the server, its version and its policy.
 */
export async function askServer(client: Client, log: (line: string) => void): Promise<ServerState> {
  const listing = categoriesResult(await client.getJson('v1/categories', LISTING_BYTES), client.server)
  const health = healthResult(await client.getJson('health', HEALTH_BYTES), client.server)
  const limits = health.limits ?? {max_batch: DEFAULT_LIMITS.maxBatch, max_bytes: DEFAULT_LIMITS.maxBytes, max_batch_bytes: DEFAULT_LIMITS.maxBatchBytes}
  const facts: RemoteFacts = {
    version: health.version,
    preset: listing.preset,
    model: listing.model,
    policySha256: health.policy?.sha256,
    maxBatch: limits.max_batch,
    maxBytes: limits.max_bytes,
    maxBatchBytes: limits.max_batch_bytes,
  }
  const policyNote = facts.policySha256 ? `policy sha256 ${facts.policySha256.slice(0, 12)}` : 'policy not stated (an older server)'
  // The listing names the preset's model whether or not it is installed; /health says whether it is.
  const model = health.signals?.clip === 'not_installed' ? 'no CLIP model installed' : `model ${visible(facts.model) || 'none'}`
  log(`mod: server: ${client.server} (mod ${facts.version}, preset ${facts.preset}, ${model}, ${policyNote})`)
  return {
    facts,
    // A trained head's labels are listed with the policy's categories, but coverage counts the policy's alone.
    categories: listing.categories.filter((c) => c.origin !== 'head'),
    labels: listing.categories.length,
    listed: listing.categories,
  }
}

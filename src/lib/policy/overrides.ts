/** One run's changes to the policy in force (`--threshold CATEGORY=VALUE`, `--disable CATEGORY`), without a file. */
import {ModError} from '../errors.js'
import {didYouMean} from '../suggest.js'
import type {Policy} from './types.js'

export interface PolicyOverrides {
  /** New thresholds, by category name; each in [0, 1]. */
  thresholds?: ReadonlyMap<string, number>
  /** Categories switched off for this run. */
  disabled?: readonly string[]
}

function unknownCategory(name: string, policy: Policy, what: string): ModError {
  return new ModError('invalid_config', `${what}: the policy has no category ${JSON.stringify(name)}${didYouMean(name, policy.categories.map((c) => c.name))}`)
}

/**
 * The policy with the thresholds changed and the categories removed, as a policy file would: a category whose
 * parent is removed loses its parent. A name the policy does not have is an error (with the nearest name).
 */
export function applyOverrides(policy: Policy, o: PolicyOverrides): Policy {
  const names = new Set(policy.categories.map((c) => c.name))
  for (const name of o.disabled ?? []) if (!names.has(name)) throw unknownCategory(name, policy, '--disable')
  for (const [name, value] of o.thresholds ?? []) {
    if (!names.has(name)) throw unknownCategory(name, policy, '--threshold')
    if (!(value >= 0 && value <= 1)) throw new ModError('invalid_config', `--threshold ${name}=${value}: a threshold is a number from 0 to 1`)
  }
  const off = new Set(o.disabled ?? [])
  for (const name of o.thresholds?.keys() ?? []) {
    if (off.has(name)) throw new ModError('invalid_config', `--threshold ${name} and --disable ${name} cannot be used together: a disabled category has no threshold`)
  }
  const categories = policy.categories
    .filter((c) => !off.has(c.name))
    .map((c) => ({...c, threshold: o.thresholds?.get(c.name) ?? c.threshold, parent: c.parent !== null && off.has(c.parent) ? null : c.parent}))
  return {...policy, categories}
}

/** "nudity=0.3" → ["nudity", 0.3]; anything else is an error naming the flag's form. */
export function parseThreshold(text: string): [string, number] {
  const at = text.lastIndexOf('=')
  const name = text.slice(0, at).trim()
  const value = at > 0 ? text.slice(at + 1).trim() : ''
  // Decimal only: Number() would also take "0x1" or "0b1" for 1.
  if (at <= 0 || !/^[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?$/i.test(value)) {
    throw new ModError('invalid_config', `--threshold ${text}: expected CATEGORY=VALUE, e.g. nudity=0.3`)
  }
  return [name, Number(value)]
}

/** Every `--threshold` given, by category; one category given two values is an error (which one was meant?). */
export function parseThresholds(texts: readonly string[]): Map<string, number> {
  const thresholds = new Map<string, number>()
  for (const text of texts) {
    const [name, value] = parseThreshold(text)
    const before = thresholds.get(name)
    if (before !== undefined && before !== value) {
      throw new ModError('invalid_config', `--threshold ${name} is given twice, ${before} and ${value}: give it once`)
    }
    thresholds.set(name, value)
  }
  return thresholds
}

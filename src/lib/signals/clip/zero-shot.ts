/**
 * Zero-shot category scores from CLIP embeddings.
 *
 * For a category with positive prompts P and reference prompts R (its negatives plus the policy's neutral
 * prompts), with s(p) = cos(image, p):
 *   raw = LME(T·s(P)) − LME(T·s(R)),   LME(x) = log(mean(exp(x))),   T = 100 (CLIP's logit scale)
 * so raw = 0 when nothing tells the positives from the references, and a negative that fits the image better
 * lowers it. With R empty the second term is 0. The score is calibrate(raw) (calibrate.ts).
 */
import {ModError} from '../../errors.js'
import type {Policy} from '../../policy/types.js'
import {calibrate} from '../../scoring/calibrate.js'
import {l2Norm} from '../../scoring/vector.js'

export const LOGIT_SCALE = 100

/** Cosine similarity; 0 (never NaN) when either vector is zero. */
export function cosine(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) {
    throw new ModError('internal', `embedding sizes differ: ${a.length} and ${b.length}`)
  }
  const na = l2Norm(a)
  const nb = l2Norm(b)
  if (na === 0 || nb === 0) return 0
  let dot = 0
  for (let i = 0; i < a.length; i++) dot += a[i] * b[i]
  return dot / (na * nb)
}

/** log(mean(exp(x))), shifted by the maximum so exp() cannot overflow; 0 for no values. */
export function logMeanExp(xs: readonly number[]): number {
  if (xs.length === 0) return 0
  let max = -Infinity
  for (const x of xs) max = Math.max(max, x)
  let sum = 0
  for (const x of xs) sum += Math.exp(x - max)
  return max + Math.log(sum / xs.length)
}

/** The category margin in logits, from the similarities of its positive and reference prompts. */
export function rawScore(positiveSims: readonly number[], referenceSims: readonly number[]): number {
  const scaled = (sims: readonly number[]) => sims.map((s) => LOGIT_SCALE * s)
  return logMeanExp(scaled(positiveSims)) - logMeanExp(scaled(referenceSims))
}

/** Every distinct prompt text the policy needs embedded, in first-use order. */
export function policyPrompts(policy: Policy): string[] {
  const texts = new Set<string>()
  for (const category of policy.categories) {
    for (const p of category.prompts) texts.add(p)
    for (const p of category.negatives) texts.add(p)
  }
  for (const p of policy.neutral) texts.add(p)
  return [...texts]
}

/** Each category's margin in logits (before calibration) from the image embedding and the prompt embeddings. */
export function zeroShotMargins(
  image: Float32Array,
  policy: Policy,
  prompts: ReadonlyMap<string, Float32Array>,
): Map<string, number> {
  const sims = new Map<string, number>()
  const sim = (text: string): number => {
    let s = sims.get(text)
    if (s === undefined) {
      const embedding = prompts.get(text)
      if (embedding === undefined) throw new ModError('internal', `no embedding for the prompt "${text}"`)
      s = cosine(image, embedding)
      sims.set(text, s)
    }
    return s
  }
  const margins = new Map<string, number>()
  for (const category of policy.categories) {
    const references = new Set([...category.negatives, ...policy.neutral])
    margins.set(category.name, rawScore(category.prompts.map(sim), [...references].map(sim)))
  }
  return margins
}

/** The zero-shot signal: each category's calibrated score from the image embedding and the prompt embeddings. */
export function zeroShotScores(
  image: Float32Array,
  policy: Policy,
  prompts: ReadonlyMap<string, Float32Array>,
): Map<string, number> {
  const margins = zeroShotMargins(image, policy, prompts)
  return new Map(policy.categories.map((c) => [c.name, calibrate(margins.get(c.name) as number, c.calibration)]))
}

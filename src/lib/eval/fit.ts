/**
 * Fitting helpers for calibrate and head train: the held-out split, Platt scaling of a raw score, and
 * threshold choice for a target false-positive rate or recall.
 */
import {createHash} from 'node:crypto'

import {sigmoid} from '../scoring/calibrate.js'
import type {Calibration} from '../policy/types.js'

/**
 * Whether an image is held out: decided by its content hash and a seed, so the split is the same on every
 * run, for every copy of a file, and independent of file names and order.
 */
export function isHeldOut(sha256: string, seed: number, fraction: number): boolean {
  const h = createHash('sha256').update(`${seed}:${sha256}`).digest()
  return h.readUInt32BE(0) / 2 ** 32 < fraction
}

/** Weights that give each class the same total weight, so folder sizes do not move the fit. */
export function balancedWeights(y: ArrayLike<boolean>): {pos: number; neg: number} {
  let p = 0
  for (let i = 0; i < y.length; i++) if (y[i]) p++
  const n = y.length - p
  return {pos: p === 0 ? 0 : y.length / (2 * p), neg: n === 0 ? 0 : y.length / (2 * n)}
}

/**
 * Platt scaling: score = sigmoid(scale * raw + bias), fitted by class-balanced logistic regression (Newton's
 * method on the standardised raw score, with a small L2 penalty on the slope so that separable data still
 * gives a finite scale). Undefined when a class is empty or the fitted slope is not positive (the raw score
 * then does not rank the label's images higher).
 */
export function fitPlatt(raw: ArrayLike<number>, y: ArrayLike<boolean>, l2 = 0.01): Calibration | undefined {
  const n = raw.length
  const w = balancedWeights(y)
  if (w.pos === 0 || w.neg === 0) return undefined
  let mean = 0
  for (let i = 0; i < n; i++) mean += raw[i]
  mean /= n
  let variance = 0
  for (let i = 0; i < n; i++) variance += (raw[i] - mean) ** 2
  const std = Math.sqrt(variance / n) || 1
  let a = 0
  let b = 0
  for (let iter = 0; iter < 100; iter++) {
    let ga = l2 * a * n
    let gb = 0
    let haa = l2 * n
    let hab = 0
    let hbb = 0
    for (let i = 0; i < n; i++) {
      const x = (raw[i] - mean) / std
      const p = sigmoid(a * x + b)
      const wi = y[i] ? w.pos : w.neg
      const r = wi * (p - (y[i] ? 1 : 0))
      const q = wi * p * (1 - p)
      ga += r * x
      gb += r
      haa += q * x * x
      hab += q * x
      hbb += q
    }
    const det = haa * hbb - hab * hab
    if (!(det > 0)) break
    const da = (hbb * ga - hab * gb) / det
    const db = (haa * gb - hab * ga) / det
    a -= da
    b -= db
    if (Math.abs(da) + Math.abs(db) < 1e-10) break
  }
  if (!(a > 0) || !Number.isFinite(a) || !Number.isFinite(b)) return undefined
  return {scale: a / std, bias: b - (a * mean) / std}
}

// Loops, not Math.min(...xs): a dataset's scores can be more than a call's argument limit.
const minOf = (xs: readonly number[]) => xs.reduce((a, b) => (b < a ? b : a), Infinity)
const maxOf = (xs: readonly number[]) => xs.reduce((a, b) => (b > a ? b : a), -Infinity)
const up4 = (x: number) => Math.min(1, Math.ceil(x * 10_000 - 1e-9) / 10_000)
const down4 = (x: number) => Math.max(0, Math.floor(x * 10_000 + 1e-9) / 10_000)

/**
 * The lowest threshold (4 decimals, like scores) that flags at most `maxFpr` of the safe images, placed
 * halfway between the highest safe score it must leave out and the next score above it, so recall on these
 * images is the most it can be and a little margin is left.
 */
export function thresholdForMaxFpr(positives: readonly number[], safe: readonly number[], maxFpr: number): number {
  const sortedSafe = [...safe].sort((a, b) => b - a)
  const allowed = Math.floor(maxFpr * sortedSafe.length + 1e-9)
  if (allowed >= sortedSafe.length) return down4(Math.min(minOf(positives), minOf(sortedSafe)))
  const keepOut = sortedSafe[allowed]
  const above = [...positives, ...sortedSafe].filter((s) => s > keepOut)
  if (above.length === 0) return up4(keepOut + 0.0001)
  const t = up4((keepOut + minOf(above)) / 2)
  return t > keepOut ? t : up4(keepOut + 0.0001)
}

/** The highest threshold (4 decimals) that still flags at least `minRecall` of the positives. */
export function thresholdForMinRecall(positives: readonly number[], others: readonly number[], minRecall: number): number {
  const sorted = [...positives].sort((a, b) => b - a)
  const needed = Math.max(1, Math.ceil(minRecall * sorted.length - 1e-9))
  const lowest = sorted[Math.min(needed, sorted.length) - 1]
  const below = [...positives, ...others].filter((s) => s < lowest)
  if (below.length === 0) return down4(lowest)
  const highestBelow = maxOf(below)
  const t = down4((lowest + highestBelow) / 2)
  return t > highestBelow ? t : down4(lowest)
}

/** From a category's raw logit margin to a score in [0, 1]. */
import type {Calibration} from '../policy/types.js'

export function sigmoid(x: number): number {
  // Two branches keep exp() from overflowing for large |x|.
  if (x >= 0) return 1 / (1 + Math.exp(-x))
  const e = Math.exp(x)
  return e / (1 + e)
}

/** calibrated = sigmoid(scale * raw + bias) (Platt scaling). */
export function calibrate(raw: number, calibration: Calibration): number {
  return sigmoid(calibration.scale * raw + calibration.bias)
}

/** Results carry scores rounded to 4 decimals. */
export function roundScore(score: number): number {
  return Math.round(score * 10_000) / 10_000
}

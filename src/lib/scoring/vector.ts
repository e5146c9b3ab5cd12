/** The vector arithmetic every signal shares: one L2 normalisation and one linear logit. */

export function l2Norm(v: ArrayLike<number>): number {
  let sum = 0
  for (let i = 0; i < v.length; i++) sum += v[i] * v[i]
  return Math.sqrt(sum)
}

/** `v` scaled to unit length, in double precision; an all-zero vector stays zero. */
export function l2Normalised(v: ArrayLike<number>): Float64Array {
  const n = l2Norm(v)
  return Float64Array.from(v as ArrayLike<number>, (x) => (n === 0 ? 0 : x / n))
}

/** Scales `v` to unit length in place (single precision, as the encoders' outputs are kept); zero stays zero. */
export function normaliseInPlace(v: Float32Array): Float32Array {
  const n = l2Norm(v)
  if (n > 0) {
    const inv = 1 / n
    for (let k = 0; k < v.length; k++) v[k] *= inv
  }
  return v
}

/** bias + weights · x: a head label's logit, in training as in scoring. */
export function linearLogit(weights: ArrayLike<number>, bias: number, x: ArrayLike<number>): number {
  let z = bias
  for (let k = 0; k < x.length; k++) z += weights[k] * x[k]
  return z
}

/**
 * A matrix/shaper colour transform to sRGB applied to 8-bit samples here, for the colour a browser applies and
 * libvips does not (icc.ts libvipsIgnores, a PNG's cHRM or cICP chunk, an AVIF's nclx box): each channel's stored
 * value to linear light through its curve, the three mixed by a matrix into sRGB's linear light, HDR light
 * tone-mapped, clipped, encoded as sRGB.
 */

/**
 * What the transform needs: each channel's curve on [0, 1] and the matrix from its linear light to sRGB's; for HDR
 * light (above 1, SDR white), the `tone` curve that maps a pixel's brightest channel from [0, peak] into [0, 1], the
 * other two scaled by the same factor.
 */
export interface Shaper {
  curves: readonly ((x: number) => number)[]
  matrix: readonly (readonly number[])[]
  tone?: {curve: (x: number) => number; peak: number}
}

/** Steps of linear light in the encoding table: fine enough that a step moves an 8-bit sRGB value by at most 0.2. */
const STEPS = 16_384

/** sRGB's encoding of linear light (IEC 61966-2-1). */
export function srgbEncode(linear: number): number {
  return linear <= 0.0031308 ? 12.92 * linear : 1.055 * linear ** (1 / 2.4) - 0.055
}

/** Linear light in STEPS steps to 8-bit sRGB. */
function encodingTable(): Uint8Array {
  return Uint8Array.from({length: STEPS + 1}, (_, i) => Math.round(255 * srgbEncode(i / STEPS)))
}

/** Applies the transform to the colour samples of 8-bit pixels of `channels` samples (RGB or RGBA: alpha is left alone). */
export function applyShaper(data: Buffer, channels: number, shaper: Shaper): void {
  const top = shaper.tone?.peak ?? 1
  const linear = shaper.curves.map((curve) => Float64Array.from({length: 256}, (_, v) => Math.min(top, Math.max(0, curve(v / 255)))))
  const [r, g, b] = linear
  const m = shaper.matrix.flat()
  const tone = shaper.tone?.curve
  const encode = encodingTable()
  const at = (x: number): number => encode[Math.round(STEPS * Math.min(1, Math.max(0, x)))]
  for (let i = 0; i < data.length; i += channels) {
    const lr = r[data[i]]
    const lg = g[data[i + 1]]
    const lb = b[data[i + 2]]
    const sr = m[0] * lr + m[1] * lg + m[2] * lb
    const sg = m[3] * lr + m[4] * lg + m[5] * lb
    const sb = m[6] * lr + m[7] * lg + m[8] * lb
    const brightest = Math.max(sr, sg, sb)
    const k = tone && brightest > 0 ? tone(brightest) / brightest : 1
    data[i] = at(sr * k)
    data[i + 1] = at(sg * k)
    data[i + 2] = at(sb * k)
  }
}

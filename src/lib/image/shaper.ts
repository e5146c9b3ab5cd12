/**
 * A matrix/shaper colour transform to sRGB applied to 8-bit samples here, for the colour a browser applies and
 * libvips does not (icc.ts libvipsIgnores, a PNG's cHRM or cICP chunk): each channel's stored value to linear light
 * through its curve, the three mixed by a matrix into sRGB's linear light, clipped, encoded as sRGB.
 */

/** What the transform needs: each channel's curve on [0, 1] and the matrix from its linear light to sRGB's. */
export interface Shaper {
  curves: readonly ((x: number) => number)[]
  matrix: readonly (readonly number[])[]
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
  const linear = shaper.curves.map((curve) => Float64Array.from({length: 256}, (_, v) => Math.min(1, Math.max(0, curve(v / 255)))))
  const [r, g, b] = linear
  const m = shaper.matrix.flat()
  const encode = encodingTable()
  const at = (x: number): number => encode[Math.round(STEPS * Math.min(1, Math.max(0, x)))]
  for (let i = 0; i < data.length; i += channels) {
    const lr = r[data[i]]
    const lg = g[data[i + 1]]
    const lb = b[data[i + 2]]
    data[i] = at(m[0] * lr + m[1] * lg + m[2] * lb)
    data[i + 1] = at(m[3] * lr + m[4] * lg + m[5] * lb)
    data[i + 2] = at(m[6] * lr + m[7] * lg + m[8] * lb)
  }
}

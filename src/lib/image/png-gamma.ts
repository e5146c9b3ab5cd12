/**
 * A PNG's gAMA chunk, as browsers apply it. The chunk gives the exponent the samples were encoded with (its value is
 * that exponent × 100 000: a sample is linear light raised to it); a viewer decodes the samples to light with it and
 * shows that light, while libvips keeps the stored samples as they are. A PNG stored nearly white with a tiny gamma
 * is so shown as an ordinary photo by a browser and read as a blank page by libvips. An sRGB, iCCP or cICP chunk
 * takes precedence over gAMA (W3C PNG specification, colour chunk precedence); libvips applies an iCCP profile itself.
 */
import {SIGNATURE_BYTES} from './apng.js'

/**
 * How far a PNG's gamma may be from the 1/2.2 that displays assume (0.45455, which PNG writers often record) before it
 * is applied: within it, decoding with it would move an 8-bit value by a few levels in the shadows, and the stored
 * values are kept.
 */
const KEPT_WITHIN = 0.1

/**
 * The gamma to decode a PNG's samples with, from its gAMA chunk; undefined when it has none, one that is not
 * valid, or a chunk that takes precedence, or when it is within KEPT_WITHIN of 1/2.2. Only chunks before the image
 * data are read, where the specification puts these.
 */
export function pngGamma(png: Buffer): number | undefined {
  let gamma: number | undefined
  for (let at = SIGNATURE_BYTES; at + 8 <= png.length; ) {
    const length = png.readUInt32BE(at)
    const type = png.toString('latin1', at + 4, at + 8)
    if (type === 'IDAT') break
    if (type === 'sRGB' || type === 'iCCP' || type === 'cICP') return undefined
    if (type === 'gAMA' && length === 4 && at + 12 <= png.length) gamma = png.readUInt32BE(at + 8) / 100_000
    // Length, type, data, CRC.
    at += 12 + length
  }
  if (gamma === undefined || gamma <= 0) return undefined
  return Math.abs(2.2 * gamma - 1) <= KEPT_WITHIN ? undefined : gamma
}

/** sRGB's encoding of linear light (IEC 61966-2-1). */
function srgbEncode(linear: number): number {
  return linear <= 0.0031308 ? 12.92 * linear : 1.055 * linear ** (1 / 2.4) - 0.055
}

/** For each 8-bit sample, the sRGB value of the light it stands for under `gamma`. */
export function gammaTable(gamma: number): Uint8Array {
  return Uint8Array.from({length: 256}, (_, v) => Math.round(255 * srgbEncode((v / 255) ** (1 / gamma))))
}

/** Applies `table` to the colour samples of 8-bit pixels of `channels` samples (RGB or RGBA: alpha is left alone). */
export function applyTable(data: Buffer, channels: number, table: Uint8Array): void {
  for (let i = 0; i < data.length; i += channels) {
    data[i] = table[data[i]]
    data[i + 1] = table[data[i + 1]]
    data[i + 2] = table[data[i + 2]]
  }
}

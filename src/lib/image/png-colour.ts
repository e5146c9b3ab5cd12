/**
 * A PNG's colour chunks, as browsers apply them, where libvips keeps the stored samples. Precedence (W3C PNG
 * specification, third edition): cICP, then iCCP, then sRGB, then gAMA with cHRM.
 * - gAMA gives the exponent the samples were encoded with (its value is that exponent × 100 000: a sample is linear
 *   light raised to it); a viewer decodes the samples to light with it. A PNG stored nearly white under a tiny gamma
 *   is an ordinary photo to a browser and a blank page to libvips.
 * - cHRM gives the primaries and white point; browsers apply it with a gAMA chunk (not alone), so a PNG whose red and
 *   green are swapped in its samples and in its cHRM is the photo to a browser.
 * - cICP names the colour space by code points (ITU-T H.273, cicp.ts) and overrides an iCCP profile, which libvips would
 *   apply.
 * - iCCP's profile is applied by libvips, except where libpng drops it (an RGB profile in a greyscale PNG): it is read
 *   here for that case.
 */
import {inflateSync} from 'node:zlib'

import {ModError} from '../errors.js'
import {SIGNATURE_BYTES} from './apng.js'
import {BT709_AS_DISPLAYED, cicpColour} from './cicp.js'
import {colorants, toSrgbMatrix} from './icc.js'
import {type Shaper, srgbEncode} from './shaper.js'

/**
 * How far a PNG's gamma may be from the 1/2.2 that displays assume (0.45455, which PNG writers often record) before it
 * is applied: within it, decoding with it would move an 8-bit value by a few levels in the shadows, and the stored
 * values are kept.
 */
const KEPT_WITHIN = 0.1

/** How far from the identity the matrix from a cHRM's primaries to sRGB's may be for them to count as sRGB's. */
const SAME_PRIMARIES = 0.01

/** The largest ICC profile read from an iCCP chunk (profiles of real images are a few KiB). */
const MAX_PROFILE_BYTES = 4 * 1024 * 1024

/** The colour chunks before the image data, where the specification puts them. */
interface Chunks {
  gamma?: number
  /** White point then red, green and blue primaries, as (x, y) chromaticities. */
  chrm?: number[][]
  cicp?: number[]
  srgb?: true
  iccp?: Buffer
}

function readChunks(png: Buffer): Chunks {
  const found: Chunks = {}
  for (let at = SIGNATURE_BYTES; at + 8 <= png.length; ) {
    const length = png.readUInt32BE(at)
    const type = png.toString('latin1', at + 4, at + 8)
    const data = png.subarray(at + 8, Math.min(png.length, at + 8 + length))
    if (type === 'IDAT') break
    if (type === 'gAMA' && data.length === 4) found.gamma = data.readUInt32BE(0) / 100_000
    if (type === 'cHRM' && data.length === 32) found.chrm = [0, 1, 2, 3].map((k) => [data.readUInt32BE(8 * k) / 100_000, data.readUInt32BE(8 * k + 4) / 100_000])
    if (type === 'cICP' && data.length === 4) found.cicp = [...data]
    if (type === 'sRGB') found.srgb = true
    if (type === 'iCCP') found.iccp = data
    // Length, type, data, CRC.
    at += 12 + length
  }
  return found
}

/** The profile of an iCCP chunk (a name, a NUL, a method byte, then the zlib stream); undefined when unreadable. */
function inflateProfile(chunk: Buffer): Buffer | undefined {
  const nul = chunk.indexOf(0)
  if (nul < 1 || nul > 79 || chunk[nul + 1] !== 0) return undefined
  try {
    return inflateSync(chunk.subarray(nul + 2), {maxOutputLength: MAX_PROFILE_BYTES})
  } catch {
    return undefined
  }
}

/** What decoding does with a PNG's colour: keep the stored values, apply a transform here, or read this profile. */
export type PngColour = {keep: true} | {shaper: Shaper} | {profile: Buffer} | {gamma: number} | undefined

/** A cICP chunk's colour: its matrix must be 0 (RGB) and its range full, as the PNG specification requires. */
function pngCicp([primaries, transfer, matrix, fullRange]: number[]): PngColour {
  if (matrix !== 0 || fullRange !== 1) {
    throw new ModError('unsupported_media', `PNG images whose cICP chunk names matrix ${matrix} and ${fullRange === 1 ? 'full' : 'narrow'} range are not supported (video colour spaces); send it in sRGB or Display P3`)
  }
  return cicpColour(primaries, transfer, "the PNG image's cICP chunk", BT709_AS_DISPLAYED.png)
}

/**
 * What a browser does with a PNG's colour that libvips would not do alike (the module's comment): undefined when
 * libvips decodes it as a browser shows it (no colour chunk, an sRGB chunk, an iCCP profile libpng keeps for
 * libvips). `greyProfile`: libvips has no profile for the image (libpng dropped its iCCP): the chunk's is read.
 * Throws `unsupported_media` for a cICP colour space it does not convert (narrow range, code points cicp.ts lacks).
 */
export function pngColour(png: Buffer, greyProfile: boolean): PngColour {
  const chunks = readChunks(png)
  if (chunks.cicp) return pngCicp(chunks.cicp)
  if (chunks.iccp) {
    const profile = greyProfile ? inflateProfile(chunks.iccp) : undefined
    return profile ? {profile} : undefined
  }
  if (chunks.srgb) return undefined
  const {gamma, chrm} = chunks
  if (gamma === undefined || gamma <= 0) return undefined
  // Two primaries the same: browsers drop the chunks, gAMA too, and show the stored values.
  if (chrm && [[1, 2], [1, 3], [2, 3]].some(([i, j]) => chrm[i][0] === chrm[j][0] && chrm[i][1] === chrm[j][1])) return undefined
  const columns = chrm ? colorants(chrm) : undefined
  const matrix = columns ? toSrgbMatrix(columns) : undefined
  // Primaries within rounding of sRGB's (the cHRM many writers add beside gAMA) leave the gamma alone to apply.
  if (matrix && matrix.some((row, r) => row.some((v, c) => Math.abs(v - (r === c ? 1 : 0)) > SAME_PRIMARIES))) {
    const curve = (x: number): number => x ** (1 / gamma)
    return {shaper: {curves: [curve, curve, curve], matrix}}
  }
  return Math.abs(2.2 * gamma - 1) <= KEPT_WITHIN ? undefined : {gamma}
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

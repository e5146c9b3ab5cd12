/**
 * Colour named by ITU-T H.273 code points (colour primaries, transfer characteristics), as a PNG's cICP chunk and an
 * AVIF's `nclx` colour box give it, to the transform that shows it as a browser does on an SDR screen.
 *
 * HDR transfers (PQ, HLG) are tone-mapped as the video decoder maps HDR video (docs/video.md): linear light with
 * HDR's reference white (203 cd/m², ITU-R BT.2408) as SDR white, the light above 80% of it compressed by a Möbius
 * curve up to a peak of 1000 cd/m² (applied to each pixel's brightest channel, the others scaled alike, so hues
 * keep), then sRGB.
 */
import {ModError} from '../errors.js'
import {colorants, srgbDecode, toSrgbMatrix} from './icc.js'
import type {Shaper} from './shaper.js'

/**
 * Luminance (cd/m²) of HDR's reference white, the white of an SDR picture (ITU-R BT.2408): PQ code about 0.58, HLG
 * code 0.75 on a display of 1000 cd/m². HDR stills here and HDR video (video/decoder.ts) both map it to SDR white.
 */
export const REFERENCE_WHITE = 203

/**
 * The brightest HDR light kept apart from white (cd/m²): HLG's peak, and what most PQ content is mastered for (the
 * mastering display's own, which the code points do not give, is not read).
 */
export const HDR_PEAK = 1000

/** Where the Möbius curve leaves the identity, as a share of SDR white (ffmpeg's tonemap `param` for video). */
export const KNEE = 0.8

/** SMPTE 170M's primaries (BT.601's for 525 lines), which SMPTE 240M shares. */
const SMPTE_170M = [[0.3127, 0.329], [0.63, 0.34], [0.31, 0.595], [0.155, 0.07]]

/** H.273 colour primaries this converts, as white point then red, green, blue chromaticities. */
const PRIMARIES: Record<number, number[][]> = {
  1: [[0.3127, 0.329], [0.64, 0.33], [0.3, 0.6], [0.15, 0.06]],
  5: [[0.3127, 0.329], [0.64, 0.33], [0.29, 0.6], [0.15, 0.06]],
  6: SMPTE_170M,
  7: SMPTE_170M,
  9: [[0.3127, 0.329], [0.708, 0.292], [0.17, 0.797], [0.131, 0.046]],
  12: [[0.3127, 0.329], [0.68, 0.32], [0.265, 0.69], [0.15, 0.06]],
}

/**
 * How a decoder reads the transfer of BT.709 (and of BT.601 and BT.2020, the same curve: code points 1, 6, 14, 15), a
 * camera's curve that H.273 leaves the display to invert: Chromium's PNG decoder as BT.1886's display (a 2.4 gamma),
 * its AVIF decoder as sRGB's curve (its stored values). Checked against Chromium 156 (2026-11-30).
 */
export const BT709_AS_DISPLAYED = {png: (x: number): number => x ** 2.4, avif: srgbDecode}
const BT709_FAMILY = new Set([1, 6, 14, 15])

/** SMPTE ST 2084 (PQ) from a signal to light relative to REFERENCE_WHITE. */
function pqDecode(x: number): number {
  const [m1, m2, c1, c2, c3] = [2610 / 16384, (2523 / 4096) * 128, 3424 / 4096, (2413 / 4096) * 32, (2392 / 4096) * 32]
  const p = Math.max(0, x) ** (1 / m2)
  return ((Math.max(p - c1, 0) / (c2 - c3 * p)) ** (1 / m1) * 10_000) / REFERENCE_WHITE
}

/**
 * ARIB STD-B67 (HLG) from a signal to displayed light relative to REFERENCE_WHITE: the inverse of its camera curve,
 * then its display's system gamma of 1.2 at HDR_PEAK, here on each channel alone (the standard raises the scene's
 * luminance, not each channel: the same for greys, a few per cent apart in saturated colours).
 */
function hlgDecode(x: number): number {
  const [a, b, c] = [0.17883277, 0.28466892, 0.55991073]
  const v = Math.max(0, x)
  const scene = v <= 0.5 ? (v * v) / 3 : (Math.exp((v - c) / a) + b) / 12
  return (HDR_PEAK * scene ** 1.2) / REFERENCE_WHITE
}

/** H.273 transfer characteristics this converts besides BT709_FAMILY's, as curves to linear light (1: SDR white). */
const TRANSFERS: Record<number, (x: number) => number> = {
  4: (x) => x ** 2.2,
  5: (x) => x ** 2.8,
  8: (x) => x,
  13: srgbDecode,
  16: pqDecode,
  18: hlgDecode,
}
const HDR_TRANSFERS = new Set([16, 18])

/**
 * The Möbius curve of HDR light (1: SDR white) into SDR's [0, 1] for content peaking at `peak`: the identity up to
 * `knee`, then m(x) = s (x + a) / (x + b), its three constants fixed by m(knee) = knee, m'(knee) = 1 and m(peak) = 1.
 */
export function mobius(knee: number, peak: number): (x: number) => number {
  const a = (-knee * knee * (peak - 1)) / (knee * knee - 2 * knee + peak)
  const b = (knee * knee - 2 * knee * peak + peak) / Math.max(peak - 1, 1e-6)
  const s = (b + knee) ** 2 / (b - a)
  return (x) => (x <= knee ? x : (s * (x + a)) / (x + b))
}

/** What a colour named by code points needs: nothing (sRGB, or unspecified), or a transform. */
export type CicpColour = {keep: true} | {shaper: Shaper}

/**
 * The transform for colour `primaries` and `transfer` (H.273 code points; 2 is "unspecified", read as sRGB's), BT.709's
 * transfer read by `bt709` (BT709_AS_DISPLAYED); throws `unsupported_media` naming `what` (the image's kind of colour
 * data) for code points it does not convert.
 */
export function cicpColour(primaries: number, transfer: number, what: string, bt709: (x: number) => number): CicpColour {
  const p = primaries === 2 ? 1 : primaries
  const t = transfer === 2 ? 13 : transfer
  const curve = BT709_FAMILY.has(t) ? bt709 : TRANSFERS[t]
  if (p === 1 && curve === srgbDecode) return {keep: true}
  const columns = PRIMARIES[p] ? colorants(PRIMARIES[p]) : undefined
  if (!columns || !curve) {
    throw new ModError('unsupported_media', `${what} names colour primaries ${primaries} and transfer ${transfer}, which are not supported; send it in sRGB or Display P3`)
  }
  const tone = HDR_TRANSFERS.has(t) ? {tone: {curve: mobius(KNEE, HDR_PEAK / REFERENCE_WHITE), peak: HDR_PEAK / REFERENCE_WHITE}} : {}
  return {shaper: {curves: [curve, curve, curve], matrix: toSrgbMatrix(columns), ...tone}}
}

/**
 * Whether an embedded ICC profile is sRGB in all but name: converting an image from it to sRGB would move no
 * 8-bit value by more than one level (as much as the colour engine's own rounding does), so its stored values
 * are sRGB already and decoding can keep them.
 *
 * Decided from what a colour transform would use, not from the profile's name (vendors ship "sRGB" profiles
 * with a 2.2 gamma, and any profile can be called sRGB): an RGB display or input profile that relates to XYZ
 * through three tone curves and three colorants (a matrix/shaper profile, with no lookup tables, which a
 * transform would prefer), whose transform to sRGB is computed for every 8-bit value of each channel with the
 * other two channels at their extremes (the output is linear in them). A profile that cannot be read is not sRGB.
 */

/** sRGB's primaries adapted to the D50 profile connection space, as the ICC's sRGB profiles store them (columns r, g, b). */
const SRGB_COLORANTS = [
  [0.43607, 0.38515, 0.14307],
  [0.22249, 0.71687, 0.06061],
  [0.01392, 0.09708, 0.7141],
]

/** Display, input and colour-space profiles: the classes that describe how stored RGB values look. */
const DEVICE_CLASSES = ['mntr', 'scnr', 'spac']

/** Lookup-table tags, which a transform prefers to the matrix and curves when present. */
const LUT_TAGS = ['A2B0', 'A2B1', 'A2B2', 'B2A0', 'B2A1', 'B2A2', 'D2B0', 'B2D0']

/** sRGB's decoding of an encoded value to linear light (IEC 61966-2-1), clipped to [0, 1]. */
export function srgbDecode(x: number): number {
  const v = Math.min(1, Math.max(0, x))
  return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4
}

/** For each 8-bit value v, the linear values that sRGB encodes to within one level of v: constant tables. */
const LOW = Float64Array.from({length: 256}, (_, v) => srgbDecode((v - 1) / 255))
const HIGH = Float64Array.from({length: 256}, (_, v) => (v === 255 ? 1 : srgbDecode((v + 1) / 255)))

/**
 * Tags by signature: their offset and size, within the profile. A signature listed twice is the first of them, as
 * Chromium's colour engine (skcms) reads it: a profile whose tone curves come first as one curve and again as sRGB's
 * would otherwise be kept as sRGB while browsers show the stored values through the first (Little CMS, in libvips,
 * refuses such a profile: libvipsIgnores).
 */
function readTags(icc: Buffer): Map<string, {offset: number; size: number}> | undefined {
  if (icc.length < 132 || icc.readUInt32BE(0) > icc.length) return undefined
  const count = icc.readUInt32BE(128)
  if (132 + count * 12 > icc.length) return undefined
  const tags = new Map<string, {offset: number; size: number}>()
  for (let i = 0; i < count; i++) {
    const at = 132 + i * 12
    const offset = icc.readUInt32BE(at + 4)
    const size = icc.readUInt32BE(at + 8)
    if (offset + size > icc.length || size < 8) return undefined
    const signature = icc.toString('latin1', at, at + 4)
    if (!tags.has(signature)) tags.set(signature, {offset, size})
  }
  return tags
}

const s15Fixed16 = (icc: Buffer, at: number): number => icc.readInt32BE(at) / 65536

function readXyz(icc: Buffer, tag: {offset: number; size: number} | undefined): number[] | undefined {
  if (!tag || tag.size < 20 || icc.toString('latin1', tag.offset, tag.offset + 4) !== 'XYZ ') return undefined
  return [0, 1, 2].map((k) => s15Fixed16(icc, tag.offset + 8 + 4 * k))
}

/** A tone curve (curveType or parametricCurveType) as a function on [0, 1], or undefined for another type. */
function readCurve(icc: Buffer, tag: {offset: number; size: number} | undefined): ((x: number) => number) | undefined {
  if (!tag || tag.size < 12) return undefined
  const {offset, size} = tag
  const type = icc.toString('latin1', offset, offset + 4)
  if (type === 'curv') {
    const n = icc.readUInt32BE(offset + 8)
    if (12 + 2 * n > size) return undefined
    if (n === 0) return (x) => x
    if (n === 1) {
      const gamma = icc.readUInt16BE(offset + 12) / 256
      return (x) => x ** gamma
    }
    const entry = (i: number): number => ((icc[offset + 12 + 2 * i] << 8) | icc[offset + 13 + 2 * i]) / 65535
    return (x) => {
      const at = x * (n - 1)
      const i = Math.min(n - 2, Math.floor(at))
      return entry(i) + (at - i) * (entry(i + 1) - entry(i))
    }
  }
  if (type === 'para') {
    const kind = icc.readUInt16BE(offset + 8)
    const count = [1, 3, 4, 5, 7][kind]
    if (count === undefined || 12 + 4 * count > size) return undefined
    const [g, a = 1, b = 0, c = 0, d = 0, e = 0, f = 0] = Array.from({length: count}, (_, k) => s15Fixed16(icc, offset + 12 + 4 * k))
    const power = (x: number): number => (x > 0 ? x ** g : 0)
    switch (kind) {
      case 0:
        return (x) => power(x)
      case 1:
        return (x) => (x >= -b / a ? power(a * x + b) : 0)
      case 2:
        return (x) => (x >= -b / a ? power(a * x + b) + c : c)
      case 3:
        return (x) => (x >= d ? power(a * x + b) : c * x)
      default:
        return (x) => (x >= d ? power(a * x + b) + e : c * x + f)
    }
  }
  return undefined
}

export function inverse3(m: number[][]): number[][] {
  const [[a, b, c], [d, e, f], [g, h, i]] = m
  const det = a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g)
  return [
    [(e * i - f * h) / det, (c * h - b * i) / det, (b * f - c * e) / det],
    [(f * g - d * i) / det, (a * i - c * g) / det, (c * d - a * f) / det],
    [(d * h - e * g) / det, (b * g - a * h) / det, (a * e - b * d) / det],
  ]
}

/** The profile's colorants in sRGB's terms: (sRGB's matrix)⁻¹ × (this matrix), the identity for sRGB's own. */
export function toSrgbMatrix(columns: number[][]): number[][] {
  const toSrgb = inverse3(SRGB_COLORANTS)
  return [0, 1, 2].map((r) => [0, 1, 2].map((c) => toSrgb[r][0] * columns[c][0] + toSrgb[r][1] * columns[c][1] + toSrgb[r][2] * columns[c][2]))
}

/**
 * Whether Chromium's colour engine (skcms) refuses the profile for a tone curve it does not accept, and shows the
 * stored values as if there were none: a parametric curve (the first copy of rTRC, gTRC, bTRC or kTRC) with a
 * negative g, a, c or d, of type 1 or 2 an a of 0, of type 3 or 4 a negative a d + b (the power's base at d). Little CMS applies such a
 * curve, and the transform here would too: a profile of a curve that sends every value to white hid the photo that
 * browsers show.
 */
export function browserRefuses(icc: Buffer): boolean {
  const tags = readTags(icc)
  if (!tags) return false
  return ['rTRC', 'gTRC', 'bTRC', 'kTRC'].some((signature) => {
    const tag = tags.get(signature)
    if (!tag || tag.size < 12 || icc.toString('latin1', tag.offset, tag.offset + 4) !== 'para') return false
    const kind = icc.readUInt16BE(tag.offset + 8)
    const count = [1, 3, 4, 5, 7][kind]
    if (count === undefined || 12 + 4 * count > tag.size) return false
    const [g, a = 1, b = 0, c = 0, d = 0] = Array.from({length: count}, (_, k) => s15Fixed16(icc, tag.offset + 12 + 4 * k))
    // Types 3 and 4 give d: below it the curve is linear, above it a power of a x + b, which must not be negative.
    return g < 0 || a < 0 || c < 0 || d < 0 || ((kind === 1 || kind === 2) && a === 0) || (kind >= 3 && a * d + b < 0)
  })
}

/**
 * Whether Chromium's colour engine (skcms_Parse) reads the profile at all; one it cannot read is dropped, and the image
 * shown as its stored values (Chromium logs "Failed to parse image ICC profile"). What is checked is skcms' own
 * structure check: the 'acsp' signature, a size within the data and holding the tag table, a major version of at most
 * 4, a D50 illuminant (within 0.01), every tag of 4 bytes or more within the size, an XYZ or Lab connection space,
 * and tags to convert from (A2B0-2, or tone curves with colorants: kTRC alone for a grey profile).
 */
export function browserReads(icc: Buffer): boolean {
  if (icc.length < 132 || icc.toString('latin1', 36, 40) !== 'acsp') return false
  const size = icc.readUInt32BE(0)
  const count = icc.readUInt32BE(128)
  if (size > icc.length || size < 132 + 12 * count || icc[8] > 4) return false
  const illuminant = [0, 1, 2].map((k) => s15Fixed16(icc, 68 + 4 * k))
  if (illuminant.some((v, k) => Math.abs(v - [0.9642, 1, 0.8249][k]) > 0.01)) return false
  const signatures = new Set<string>()
  for (let i = 0; i < count; i++) {
    const at = 132 + 12 * i
    const [offset, length] = [icc.readUInt32BE(at + 4), icc.readUInt32BE(at + 8)]
    if (length < 4 || offset + length > size) return false
    signatures.add(icc.toString('latin1', at, at + 4))
  }
  const pcs = icc.toString('latin1', 20, 24)
  if (pcs !== 'XYZ ' && pcs !== 'Lab ') return false
  const has = (...tags: string[]) => tags.every((t) => signatures.has(t))
  const grey = icc.toString('latin1', 16, 20) === 'GRAY' && has('kTRC')
  return has('A2B0') || has('A2B1') || has('A2B2') || (grey && pcs === 'XYZ ') || (has('rTRC', 'gTRC', 'bTRC') && has('rXYZ', 'gXYZ', 'bXYZ'))
}

/** The classes Little CMS takes as the profile of an image's stored values; libvips keeps the values of another. */
const INPUT_CLASSES = [...DEVICE_CLASSES, 'prtr']

/** Whether the profile lists a tag signature twice (the ICC specification allows each once). */
function repeatsTag(icc: Buffer): boolean {
  const count = icc.length >= 132 ? icc.readUInt32BE(128) : 0
  const seen = new Set<string>()
  for (let i = 0; i < count && 144 + i * 12 <= icc.length; i++) {
    const signature = icc.toString('latin1', 132 + i * 12, 136 + i * 12)
    if (seen.has(signature)) return true
    seen.add(signature)
  }
  return false
}

/**
 * Whether libvips would leave the stored values of an image with this profile as they are where a browser applies
 * it: a profile listing a tag twice (Little CMS refuses it; skcms reads the first), one of a class Little CMS does
 * not take for an image (an abstract profile, a device link; skcms applies its curves whatever the class), or an
 * RGB profile on a greyscale image (skcms applies it to the grey values as red, green and blue alike).
 */
export function libvipsIgnores(icc: Buffer, grey: boolean): boolean {
  if (icc.length < 132) return false
  const space = icc.toString('latin1', 16, 20)
  return repeatsTag(icc) || !INPUT_CLASSES.includes(icc.toString('latin1', 12, 16)) || (grey && space === 'RGB ')
}

/**
 * A matrix/shaper RGB profile as a transform to sRGB: each channel's tone curve (stored value to linear light, on
 * [0, 1]) and the matrix from its linear values to sRGB's; undefined for any other profile (lookup tables, another
 * colour space). Read whatever its class, as skcms reads it.
 */
export function matrixShaper(icc: Buffer): {curves: ((x: number) => number)[]; matrix: number[][]} | undefined {
  const tags = readTags(icc)
  if (!tags || icc.toString('latin1', 16, 20) !== 'RGB ' || icc.toString('latin1', 20, 24) !== 'XYZ ') return undefined
  if (LUT_TAGS.some((t) => tags.has(t))) return undefined
  const columns = ['rXYZ', 'gXYZ', 'bXYZ'].map((t) => readXyz(icc, tags.get(t)))
  const curves = ['rTRC', 'gTRC', 'bTRC'].map((t) => readCurve(icc, tags.get(t)))
  if (columns.some((c) => !c) || curves.some((c) => !c)) return undefined
  return {curves: curves as ((x: number) => number)[], matrix: toSrgbMatrix(columns as number[][])}
}

/** Whether converting from this profile to sRGB would keep every 8-bit value within one level (the module's comment). */
export function isSrgbProfile(icc: Buffer): boolean {
  const tags = readTags(icc)
  if (!tags) return false
  const deviceClass = icc.toString('latin1', 12, 16)
  if (icc.toString('latin1', 16, 20) !== 'RGB ' || icc.toString('latin1', 20, 24) !== 'XYZ ') return false
  if (!DEVICE_CLASSES.includes(deviceClass)) return false
  if (LUT_TAGS.some((t) => tags.has(t))) return false
  const columns = ['rXYZ', 'gXYZ', 'bXYZ'].map((t) => readXyz(icc, tags.get(t)))
  const curves = ['rTRC', 'gTRC', 'bTRC'].map((t) => readCurve(icc, tags.get(t)))
  if (columns.some((c) => !c) || curves.some((c) => !c)) return false
  const a = toSrgbMatrix(columns as number[][])
  const linear = new Float64Array(256)
  for (let r = 0; r < 3; r++) {
    const curve = curves[r] as (x: number) => number
    // Clipped as a transform clips: the other channels' extremes are then 0 and 1.
    for (let v = 0; v < 256; v++) linear[v] = Math.min(1, Math.max(0, curve(v / 255)))
    const [p, q] = [0, 1, 2].filter((c) => c !== r)
    for (const others of [0, a[r][p], a[r][q], a[r][p] + a[r][q]]) {
      for (let v = 0; v < 256; v++) {
        const out = Math.min(1, Math.max(0, a[r][r] * linear[v] + others))
        // Within one level of v: what sRGB encodes back to v - 1 ... v + 1.
        if (out < LOW[v] || out > HIGH[v]) return false
      }
    }
  }
  return true
}

/** XYZ of a chromaticity at luminance 1. */
function xyz([x, y]: number[]): number[] {
  return [x / y, 1, (1 - x - y) / y]
}

const multiply = (a: number[][], b: number[][]): number[][] => a.map((row) => b[0].map((_, c) => row.reduce((sum, v, k) => sum + v * b[k][c], 0)))

/** The Bradford cone response matrix, with which colour engines (skcms, Little CMS) adapt a white point to D50. */
const BRADFORD = [
  [0.8951, 0.2664, -0.1614],
  [-0.7502, 1.7135, 0.0367],
  [0.0389, -0.0685, 1.0296],
]
const D50 = [0.9642, 1, 0.8249]

/**
 * The colorants (columns r, g, b, in D50 XYZ) of primaries and a white point given as chromaticities: the primaries
 * scaled so that they add up to the white, then adapted to D50 (Bradford), as an ICC profile stores them.
 */
export function colorants([white, ...primaries]: number[][]): number[][] | undefined {
  if ([white, ...primaries].some(([, y]) => !(y > 0))) return undefined
  const p = [0, 1, 2].map((r) => primaries.map((c) => xyz(c)[r]))
  const w = xyz(white)
  const scale = inverse3(p).map((row) => row.reduce((sum, v, k) => sum + v * w[k], 0))
  if (scale.some((s) => !Number.isFinite(s))) return undefined
  const toWhite = p.map((row) => row.map((v, c) => v * scale[c]))
  const [cone, coneD50] = [BRADFORD.map((row) => row.reduce((s, v, k) => s + v * w[k], 0)), BRADFORD.map((row) => row.reduce((s, v, k) => s + v * D50[k], 0))]
  const adapt = multiply(inverse3(BRADFORD), multiply([0, 1, 2].map((r) => [0, 1, 2].map((c) => (r === c ? coneD50[r] / cone[r] : 0))), BRADFORD))
  const m = multiply(adapt, toWhite)
  return [0, 1, 2].map((c) => m.map((row) => row[c]))
}

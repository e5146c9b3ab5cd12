/**
 * ICC profiles written by hand (matrix/shaper, version 2: three colorants and three tone curves) and PNGs that
 * embed one over stored values of our choosing, so that tests know both the profile and the pixels as stored.
 */
import {deflateSync} from 'node:zlib'

import {PNG_SIGNATURE, pngChunk} from './hostile-images.js'

/** Colorants adapted to D50, columns r, g, b as XYZ. */
export type Colorants = [number[], number[], number[]]

export const SRGB: Colorants = [
  [0.43607, 0.22249, 0.01392],
  [0.38515, 0.71687, 0.09708],
  [0.14307, 0.06061, 0.7141],
]
export const DISPLAY_P3: Colorants = [
  [0.51512, 0.24120, -0.00105],
  [0.29198, 0.69225, 0.04189],
  [0.15710, 0.06657, 0.78407],
]
export const ADOBE_RGB: Colorants = [
  [0.60974, 0.31111, 0.01947],
  [0.20528, 0.62567, 0.06087],
  [0.14919, 0.06322, 0.74457],
]

/** sRGB's tone curve as an ICC parametric curve of type 3: g, a, b, c, d. */
export const SRGB_CURVE = {parametric: [2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045]}

export type Curve = {gamma: number} | {parametric: number[]} | {table: number[]}

const s15Fixed16 = (v: number): Buffer => {
  const b = Buffer.alloc(4)
  b.writeInt32BE(Math.round(v * 65536))
  return b
}

function xyzTag(v: number[]): Buffer {
  return Buffer.concat([Buffer.from('XYZ \0\0\0\0', 'latin1'), ...v.map(s15Fixed16)])
}

/** A tone curve tag: curveType for a gamma or a table, parametricCurveType for parametric. */
export function curveTag(curve: Curve): Buffer {
  if ('parametric' in curve) {
    const kind = Buffer.alloc(4)
    kind.writeUInt16BE([1, 3, 4, 5, 7].indexOf(curve.parametric.length))
    return Buffer.concat([Buffer.from('para\0\0\0\0', 'latin1'), kind, ...curve.parametric.map(s15Fixed16)])
  }
  const values = 'gamma' in curve ? [Math.round(curve.gamma * 256)] : curve.table.map((v) => Math.round(v * 65535))
  const body = Buffer.alloc(4 + 2 * values.length)
  body.writeUInt32BE(values.length)
  values.forEach((v, i) => body.writeUInt16BE(v, 4 + 2 * i))
  return Buffer.concat([Buffer.from('curv\0\0\0\0', 'latin1'), body])
}

function descTag(text: string): Buffer {
  const ascii = Buffer.from(`${text}\0`, 'latin1')
  const length = Buffer.alloc(4)
  length.writeUInt32BE(ascii.length)
  // textDescriptionType: ASCII, then empty Unicode and ScriptCode parts.
  return Buffer.concat([Buffer.from('desc\0\0\0\0', 'latin1'), length, ascii, Buffer.alloc(4 + 4 + 2 + 1 + 67)])
}

/**
 * A matrix/shaper RGB profile of class `deviceClass` (default: a display profile, mntr); `extra` adds tags as they are,
 * after the others (e.g. an A2B0 lookup table, or a second copy of a curve).
 */
export function matrixShaperProfile(options: {colorants: Colorants; curve: Curve; name?: string; extra?: Record<string, Buffer>; deviceClass?: string}): Buffer {
  const curve = curveTag(options.curve)
  const tags: [string, Buffer][] = [
    ['desc', descTag(options.name ?? 'test profile')],
    ['wtpt', xyzTag([0.9642, 1, 0.82491])],
    ['rXYZ', xyzTag(options.colorants[0])],
    ['gXYZ', xyzTag(options.colorants[1])],
    ['bXYZ', xyzTag(options.colorants[2])],
    ['rTRC', curve],
    ['gTRC', curve],
    ['bTRC', curve],
    ...Object.entries(options.extra ?? {}),
  ]
  const table = Buffer.alloc(4 + 12 * tags.length)
  table.writeUInt32BE(tags.length)
  const bodies: Buffer[] = []
  let offset = 128 + table.length
  tags.forEach(([signature, body], i) => {
    table.write(signature, 4 + 12 * i, 'latin1')
    table.writeUInt32BE(offset, 8 + 12 * i)
    table.writeUInt32BE(body.length, 12 + 12 * i)
    const padded = Buffer.concat([body, Buffer.alloc((4 - (body.length % 4)) % 4)])
    bodies.push(padded)
    offset += padded.length
  })
  const header = Buffer.alloc(128)
  header.writeUInt32BE(offset, 0)
  header.writeUInt32BE(0x02100000, 8)
  header.write(`${options.deviceClass ?? 'mntr'}RGB XYZ `, 12, 'latin1')
  header.write('acsp', 36, 'latin1')
  ;[0.9642, 1, 0.82491].forEach((v, k) => s15Fixed16(v).copy(header, 68 + 4 * k))
  return Buffer.concat([header, table, ...bodies])
}

/**
 * An 8-bit RGB PNG holding `rgb` (width x height x 3 bytes) as stored, with `profile` embedded (iCCP; none when
 * undefined) and `chunks` (type and data) before it; `grey`: a greyscale PNG holding one byte a pixel instead;
 * `sixteen`: 16 bits a sample, the same values.
 */
export function pngWithProfile(width: number, height: number, rgb: Buffer, profile: Buffer | undefined, o: {chunks?: [string, Buffer][]; grey?: boolean; sixteen?: boolean} = {}): Buffer {
  const channels = o.grey ? 1 : 3
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(width, 0)
  ihdr.writeUInt32BE(height, 4)
  ihdr.set([o.sixteen ? 16 : 8, o.grey ? 0 : 2, 0, 0, 0], 8)
  // 16 bits: each 8-bit value v as v x 257, big-endian.
  const samples = o.sixteen ? Buffer.from([...rgb].flatMap((v) => [v, v])) : rgb
  const rowBytes = width * channels * (o.sixteen ? 2 : 1)
  const rows: Buffer[] = []
  for (let y = 0; y < height; y++) rows.push(Buffer.from([0]), samples.subarray(y * rowBytes, (y + 1) * rowBytes))
  const colour = (o.chunks ?? []).map(([type, data]) => pngChunk(type, data))
  const iccp = profile ? [pngChunk('iCCP', Buffer.concat([Buffer.from('test\0\0', 'latin1'), deflateSync(profile)]))] : []
  return Buffer.concat([PNG_SIGNATURE, pngChunk('IHDR', ihdr), ...colour, ...iccp, pngChunk('IDAT', deflateSync(Buffer.concat(rows))), pngChunk('IEND', Buffer.alloc(0))])
}

/** A JPEG with these ICC profile segments (APP2, each a sequence number, a count and its bytes) inserted after SOI. */
export function jpegWithIccSegments(jpeg: Buffer, segments: {seq: number; count: number; bytes: Buffer}[]): Buffer {
  const app2 = segments.map(({seq, count, bytes}) => {
    const head = Buffer.alloc(4)
    head.writeUInt16BE(0xffe2, 0)
    head.writeUInt16BE(2 + 14 + bytes.length, 2)
    return Buffer.concat([head, Buffer.from('ICC_PROFILE\0', 'latin1'), Buffer.from([seq, count]), bytes])
  })
  return Buffer.concat([jpeg.subarray(0, 2), ...app2, jpeg.subarray(2)])
}

/** 256 x 3 pixels: every value 0-255 once in each channel (a grey ramp, and ramps of red and of green over blue). */
export function ramps(): {width: number; height: number; rgb: Buffer} {
  const width = 256
  const rgb = Buffer.alloc(width * 3 * 3)
  for (let v = 0; v < width; v++) {
    rgb.set([v, v, v], 3 * v)
    rgb.set([v, 0, 255], 3 * (width + v))
    rgb.set([255 - v, v, 0], 3 * (2 * width + v))
  }
  return {width, height: 3, rgb}
}

/**
 * Images that are cheap to send and costly to process, generated in a few bytes: PNGs of any size built by
 * hand (sharp cannot create a 1 x 10 000 000 image without allocating it), for the tests and bench/hostile-memory.ts.
 */
import {crc32, deflateSync} from 'node:zlib'

/** The eight bytes every PNG starts with. */
export const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])

/** A PNG chunk: length, type, body and CRC. */
export function pngChunk(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(8)
  head.writeUInt32BE(body.length, 0)
  head.write(type, 4, 'latin1')
  const crc = Buffer.alloc(4)
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), body])), 0)
  return Buffer.concat([head, body, crc])
}

function ihdr(width: number, height: number, colourType: number): Buffer {
  const body = Buffer.alloc(13)
  body.writeUInt32BE(width, 0)
  body.writeUInt32BE(height, 4)
  body.set([8, colourType, 0, 0, 0], 8)
  return pngChunk('IHDR', body)
}

/** A PNG of `width` x `height` pixels of 8-bit `colourType` (deflate, no filter, no interlace) holding `pixels` as its data. */
function png(width: number, height: number, colourType: number, pixels: Buffer): Buffer {
  return Buffer.concat([PNG_SIGNATURE, ihdr(width, height, colourType), pngChunk('IDAT', pixels), pngChunk('IEND', Buffer.alloc(0))])
}

/** The deflated rows of a uniform 8-bit grey image: each row a filter byte (none) and `width` bytes of `level`. */
function greyRows(width: number, height: number, level: number): Buffer {
  const row = width + 1
  const rows = Buffer.alloc(row * height, level)
  for (let y = 0; y < height; y++) rows[y * row] = 0
  return deflateSync(rows, {level: 9})
}

/**
 * A uniform 8-bit greyscale PNG of `width` x `height` with real pixel data: every row is a filter byte and
 * `width` bytes of `level`, deflated (a 1 x 10 000 000 PNG is about 20 KB, a 10 000 000 x 1 one 10 KB).
 */
export function greyPng(width: number, height: number, level = 128): Buffer {
  return png(width, height, 0, greyRows(width, height, level))
}

/**
 * An animated PNG (APNG) of 8x8 grey whose default image (IDAT, all libvips decodes) is white and is not part of
 * the animation (no fcTL before it), while its one animation frame (fdAT, what a browser shows) is black.
 */
export function hiddenFrameApng(): Buffer {
  const actl = Buffer.alloc(8)
  actl.writeUInt32BE(1, 0) // one frame, played once
  actl.writeUInt32BE(1, 4)
  const fctl = Buffer.alloc(26)
  fctl.writeUInt32BE(0, 0) // sequence number
  fctl.writeUInt32BE(8, 4) // 8x8 at 0,0
  fctl.writeUInt32BE(8, 8)
  fctl.writeUInt16BE(1, 20) // 1/10 s
  fctl.writeUInt16BE(10, 22)
  const sequence = Buffer.alloc(4)
  sequence.writeUInt32BE(1, 0)
  return Buffer.concat([
    PNG_SIGNATURE,
    ihdr(8, 8, 0),
    pngChunk('acTL', actl),
    pngChunk('IDAT', greyRows(8, 8, 255)),
    pngChunk('fcTL', fctl),
    pngChunk('fdAT', Buffer.concat([sequence, greyRows(8, 8, 0)])),
    pngChunk('IEND', Buffer.alloc(0)),
  ])
}


/** A valid PNG header claiming an RGB image of width x height, followed by a tiny IDAT: a decompression bomb's shape. */
export function pngClaiming(width: number, height: number): Buffer {
  return png(width, height, 2, deflateSync(Buffer.alloc(1024)))
}

/** Long sides of the sweep of extreme shapes: 1 to 10^7, with both sides of the longest side accepted. */
export const SWEEP_SIDES = [1, 10, 100, 1000, 10_000, 65_535, 65_536, 100_000, 1_000_000, 10_000_000]

/** Every shape of the sweep: each long side as width and as height, against short sides of 1 and 3 px. */
export function sweepShapes(): {width: number; height: number}[] {
  const shapes: {width: number; height: number}[] = []
  for (const long of SWEEP_SIDES) {
    for (const short of [1, 3]) {
      shapes.push({width: long, height: short})
      if (long !== short) shapes.push({width: short, height: long})
    }
  }
  return shapes
}

/**
 * An animated 1x1 GIF of `frames` frames, 23 bytes each (a 25 MiB file holds over a million): a graphic control
 * extension (0.1 s, no disposal), an image descriptor and one LZW-coded pixel of the 2-colour global palette.
 */
export function manyFrameGif(frames: number): Buffer {
  const head = Buffer.from([
    ...Buffer.from('GIF89a', 'latin1'),
    1, 0, 1, 0, // logical screen 1x1
    0x80, 0, 0, // global colour table of 2 entries
    255, 0, 0, 0, 0, 255, // red, blue
    0x21, 0xff, 0x0b, ...Buffer.from('NETSCAPE2.0', 'latin1'), 3, 1, 0, 0, 0, // loop forever
  ])
  const frame = (colour: number) =>
    Buffer.from([
      0x21, 0xf9, 0x04, 0x00, 0x0a, 0x00, 0x00, 0x00, // graphic control: 10 cs, no transparency
      0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0x00, // image descriptor: 1x1 at 0,0
      0x02, 0x02, 0x44 | (colour << 3), 0x01, 0x00, // LZW (minimum code size 2): clear, the pixel, end
    ])
  const red = frame(0)
  const blue = frame(1)
  const body = Buffer.alloc(frames * red.length)
  for (let i = 0; i < frames; i++) (i % 2 ? blue : red).copy(body, i * red.length)
  return Buffer.concat([head, body, Buffer.from([0x3b])])
}

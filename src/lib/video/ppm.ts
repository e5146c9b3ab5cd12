import {ModError} from '../errors.js'
import type {RgbImage} from '../image/rgb.js'

/** ffmpeg's ppm encoder writes "P6\n<width> <height>\n255\n" before each frame's pixels. */
const HEADER = /^P6\s+(\d+)\s+(\d+)\s+(\d+)\s/
const MAX_HEADER_BYTES = 64

export interface PpmParser {
  /** Feeds the next bytes of the stream; returns the frames they completed (usually none or one), parted. */
  push(chunk: Buffer): RgbImage[]
}

function unexpected(detail: string): ModError {
  return new ModError('internal', `ffmpeg wrote an unexpected frame: ${detail}`)
}

/** A picture of `parts` stacked pictures of one size, parted from the top down (they share its buffer). */
function splitParts(frame: RgbImage, parts: number): RgbImage[] {
  if (parts === 1) return [frame]
  const height = frame.height / parts
  const bytes = frame.width * height * 3
  return Array.from({length: parts}, (_, k) => ({data: frame.data.subarray(k * bytes, (k + 1) * bytes), width: frame.width, height}))
}

/**
 * Splits an `image2pipe`/`ppm` stream into RGB frames. Only the frame being filled is held; its size is
 * checked against `maxSide` before its buffer is allocated (each frame carries its own size, so nothing is
 * taken from the container's metadata). `parts`: each picture stacks that many of one size (the decoder's views and
 * the frame of an interval, stackedParts), each at most `maxSide` a side, given one after the other.
 */
export function createPpmParser(maxSide: number, parts = 1): PpmParser {
  let header = Buffer.alloc(0)
  let frame: RgbImage | undefined
  let filled = 0

  function readHeader(chunk: Buffer, pos: number): number {
    const candidate = Buffer.concat([header, chunk.subarray(pos, pos + MAX_HEADER_BYTES - header.length)])
    const m = HEADER.exec(candidate.toString('latin1'))
    if (!m) {
      if (candidate.length >= MAX_HEADER_BYTES) throw unexpected('no PPM header')
      header = candidate
      return chunk.length
    }
    const [width, height, maxval] = [Number(m[1]), Number(m[2]), Number(m[3])]
    if (maxval !== 255) throw unexpected(`maxval ${maxval}, expected 255`)
    if (width < 1 || height < parts || width > maxSide || height > maxSide * parts || height % parts !== 0) {
      throw unexpected(`${width}x${height} is outside 1..${maxSide} pixels a side${parts > 1 ? ` for ${parts} pictures stacked` : ''}`)
    }
    const consumed = m[0].length - header.length
    header = Buffer.alloc(0)
    frame = {data: Buffer.allocUnsafe(width * height * 3), width, height}
    filled = 0
    return pos + consumed
  }

  return {
    push(chunk) {
      const done: RgbImage[] = []
      let pos = 0
      while (pos < chunk.length) {
        if (frame === undefined) {
          pos = readHeader(chunk, pos)
          continue
        }
        const n = Math.min(frame.data.length - filled, chunk.length - pos)
        chunk.copy(frame.data, filled, pos, pos + n)
        filled += n
        pos += n
        if (filled === frame.data.length) {
          done.push(...splitParts(frame, parts))
          frame = undefined
        }
      }
      return done
    },
  }
}

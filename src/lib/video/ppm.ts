import {ModError} from '../errors.js'
import type {RgbImage} from '../image/rgb.js'

/** ffmpeg's ppm encoder writes "P6\n<width> <height>\n255\n" before each frame's pixels. */
const HEADER = /^P6\s+(\d+)\s+(\d+)\s+(\d+)\s/
const MAX_HEADER_BYTES = 64

export interface PpmParser {
  /**
   * Feeds the next bytes of the stream; returns the frames they completed (usually none or one; a stacked frame's
   * dark view right after its light one).
   */
  push(chunk: Buffer): RgbImage[]
}

function unexpected(detail: string): ModError {
  return new ModError('internal', `ffmpeg wrote an unexpected frame: ${detail}`)
}

/**
 * A stacked frame's two views (a stream with alpha: onto white above, onto black below, as the decoder stacks them),
 * the dark one marked `onBlack`; one view when they are the same (every pixel of the frame opaque), as a still image
 * whose every pixel is opaque is scored once.
 */
function splitStacked(frame: RgbImage): RgbImage[] {
  const height = frame.height / 2
  const half = frame.width * height * 3
  const light = frame.data.subarray(0, half)
  const dark = frame.data.subarray(half)
  if (light.equals(dark)) return [{data: light, width: frame.width, height}]
  return [
    {data: light, width: frame.width, height},
    {data: dark, width: frame.width, height, onBlack: true},
  ]
}

/**
 * Splits an `image2pipe`/`ppm` stream into RGB frames. Only the frame being filled is held; its size is
 * checked against `maxSide` before its buffer is allocated (each frame carries its own size, so nothing is
 * taken from the container's metadata). `stacked`: each picture is a frame's two views one above the other
 * (splitStacked), each at most `maxSide` a side.
 */
export function createPpmParser(maxSide: number, stacked = false): PpmParser {
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
    const views = stacked ? 2 : 1
    if (width < 1 || height < views || width > maxSide || height > maxSide * views || height % views !== 0) {
      throw unexpected(`${width}x${height} is outside 1..${maxSide} pixels a side${stacked ? ' for two views stacked' : ''}`)
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
          done.push(...(stacked ? splitStacked(frame) : [frame]))
          frame = undefined
        }
      }
      return done
    },
  }
}

/**
 * A frame's coarse picture: the mean brightness of each of GRID x GRID blocks, from every other pixel each way. Two
 * frames whose coarse pictures differ by more than OTHER_PICTURE levels on average are other pictures: a cut to
 * another shot, or a flagged photo among ordinary ones, is; motion within a shot is not. Used where only some of an
 * animation's frames can be scored, to score the ones that show something else.
 */

const GRID = 8
/**
 * At 24, about 2 of 40 ordinary photos in a slideshow were no other picture than another one, and a flagged photo can
 * be so too (1 of 84 swimwear photos among 40 ordinary ones went unscored); at 16, none did, while a pan and zoom of 60
 * frames over a photo adds a frame in about one of eight (bench/animation.ts).
 */
const OTHER_PICTURE = 16
/** Every STEP-th pixel of every STEP-th row counts: the means of 64 blocks need no more. */
const STEP = 2

/** Accumulates coarse pictures of frames stacked in one stream of raw pixels (`channels` bytes a pixel, RGB first). */
export interface CoarseStream {
  /** Adds the bytes at `position` of the stream. */
  push(chunk: Buffer, position: number): void
  /** The coarse picture of each frame. */
  pictures(): Float64Array[]
}

export function coarseStream(width: number, height: number, channels: number, frames: number): CoarseStream {
  const sums = Array.from({length: frames}, () => new Float64Array(GRID * GRID))
  const counts = new Float64Array(GRID * GRID)
  for (let y = 0; y < height; y += STEP) {
    for (let x = 0; x < width; x += STEP) counts[blockOf(x, y, width, height)]++
  }
  const rowBytes = width * channels
  return {
    push(chunk, position) {
      const end = position + chunk.length
      for (let row = Math.floor(position / rowBytes); row * rowBytes < end; row++) {
        const [frame, y] = [Math.floor(row / height), row % height]
        if (frame >= frames || y % STEP !== 0) continue
        for (let x = 0; x < width; x += STEP) {
          const at = row * rowBytes + x * channels - position
          if (at < 0 || at + 2 >= chunk.length) continue
          sums[frame][blockOf(x, y, width, height)] += 0.299 * chunk[at] + 0.587 * chunk[at + 1] + 0.114 * chunk[at + 2]
        }
      }
    },
    pictures: () => sums.map((s) => s.map((sum, k) => (counts[k] > 0 ? sum / counts[k] : 0))),
  }
}

function blockOf(x: number, y: number, width: number, height: number): number {
  return Math.min(GRID - 1, Math.floor((y * GRID) / height)) * GRID + Math.min(GRID - 1, Math.floor((x * GRID) / width))
}

/** Whether two coarse pictures are of other pictures (the module's comment). */
export function otherPictures(a: Float64Array, b: Float64Array): boolean {
  let difference = 0
  for (let k = 0; k < a.length; k++) difference += Math.abs(a[k] - b[k])
  return difference / a.length > OTHER_PICTURE
}

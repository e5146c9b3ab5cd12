import type {RgbImage} from './rgb.js'

/**
 * Where the stored pixels are in an image decoded with an EXIF orientation applied: pixel (x, y) of the
 * stored image, `width` x `height`, is pixel `start + x * stepX + y * stepY` (in pixels, not bytes) of the
 * decoded one. Undoing the orientation is then an exact permutation, read in place without a copy.
 */
export interface StoredLayout {
  width: number
  height: number
  start: number
  stepX: number
  stepY: number
}

/** The stored image's layout in `image`, or undefined when decoding applied no orientation. */
export function storedLayout(image: RgbImage): StoredLayout | undefined {
  const {orientation, width: W, height: H} = image
  if (orientation === undefined || orientation === 1) return undefined
  // Orientations 5-8 swap the sides: the stored image is H wide and W high.
  const turned = orientation >= 5
  const width = turned ? H : W
  const height = turned ? W : H
  // Displayed (dx, dy) of stored (x, y), per EXIF: 2 mirrors, 3 turns a half, 4 flips, 5 transposes,
  // 6 turns a quarter clockwise, 7 transverses, 8 turns a quarter anticlockwise.
  const at = (dx: number, dy: number) => dy * W + dx
  const layouts: Record<number, [start: number, stepX: number, stepY: number]> = {
    2: [at(W - 1, 0), -1, W],
    3: [at(W - 1, H - 1), -1, -W],
    4: [at(0, H - 1), 1, -W],
    5: [at(0, 0), W, 1],
    6: [at(W - 1, 0), W, -1],
    7: [at(W - 1, H - 1), -W, -1],
    8: [at(0, H - 1), -W, 1],
  }
  const [start, stepX, stepY] = layouts[orientation]
  return {width, height, start, stepX, stepY}
}

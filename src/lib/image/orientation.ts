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
  const {orientation} = image
  if (orientation === undefined || orientation === 1) return undefined
  return layoutOf(orientation, image.width, image.height)
}

/** The stored image's layout in one shown `W` x `H` in `orientation` (1: as stored). */
function layoutOf(orientation: number, W: number, H: number): StoredLayout {
  // Orientations 5-8 swap the sides: the stored image is H wide and W high.
  const turned = orientation >= 5
  const width = turned ? H : W
  const height = turned ? W : H
  // Displayed (dx, dy) of stored (x, y), per EXIF: 2 mirrors, 3 turns a half, 4 flips, 5 transposes,
  // 6 turns a quarter clockwise, 7 transverses, 8 turns a quarter anticlockwise.
  const at = (dx: number, dy: number) => dy * W + dx
  const layouts: Record<number, [start: number, stepX: number, stepY: number]> = {
    1: [0, 1, W],
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

/**
 * The size of an image shown in `orientation` whose stored image is `width` x `height`; also the stored size of one
 * shown `width` x `height` (turning the sides is its own inverse).
 */
export function shownSize(orientation: number, width: number, height: number): {width: number; height: number} {
  return orientation >= 5 ? {width: height, height: width} : {width, height}
}

/**
 * `image` (decoded in its `orientation`, absent: as stored) as shown in orientation `to`: the same stored pixels,
 * turned or mirrored otherwise. A copy, made pixel by pixel: for the rare image whose tag viewers read differently.
 */
export function reoriented(image: RgbImage, to: number): RgbImage {
  const from = layoutOf(image.orientation ?? 1, image.width, image.height)
  const size = shownSize(to, from.width, from.height)
  const onto = layoutOf(to, size.width, size.height)
  const data = Buffer.alloc(image.data.length)
  for (let y = 0; y < from.height; y++) {
    for (let x = 0; x < from.width; x++) {
      const src = (from.start + x * from.stepX + y * from.stepY) * 3
      const dst = (onto.start + x * onto.stepX + y * onto.stepY) * 3
      data[dst] = image.data[src]
      data[dst + 1] = image.data[src + 1]
      data[dst + 2] = image.data[src + 2]
    }
  }
  const {orientation: _applied, ...rest} = image
  return {...rest, data, ...size, ...(to === 1 ? {} : {orientation: to})}
}

/** Stored pixel (x, y) of pixel (dx, dy) of an image shown `W` x `H` in `orientation` (the layouts above, inverted). */
function storedPixel(orientation: number, dx: number, dy: number, W: number, H: number): [number, number] {
  switch (orientation) {
    case 2:
      return [W - 1 - dx, dy]
    case 3:
      return [W - 1 - dx, H - 1 - dy]
    case 4:
      return [dx, H - 1 - dy]
    case 5:
      return [dy, dx]
    case 6:
      return [dy, W - 1 - dx]
    case 7:
      return [H - 1 - dy, W - 1 - dx]
    case 8:
      return [H - 1 - dy, dx]
    default:
      return [dx, dy]
  }
}

/**
 * A box [x, y, width, height] in an image shown `width` x `height` in orientation `from`, in the same image shown in
 * orientation `to`: its corner pixels through the stored image.
 */
export function boxInOrientation(box: readonly [number, number, number, number], from: number, to: number, width: number, height: number): [number, number, number, number] {
  const clamp = (v: number, most: number) => Math.min(Math.max(v, 0), most - 1)
  const stored = shownSize(from, width, height)
  const size = shownSize(to, stored.width, stored.height)
  const onto = layoutOf(to, size.width, size.height)
  const corners = [
    [box[0], box[1]],
    [box[0] + box[2] - 1, box[1] + box[3] - 1],
  ].map(([dx, dy]) => {
    const [x, y] = storedPixel(from, clamp(dx, width), clamp(dy, height), width, height)
    const at = onto.start + x * onto.stepX + y * onto.stepY
    return [at % size.width, Math.floor(at / size.width)]
  })
  const [left, right] = [Math.min(corners[0][0], corners[1][0]), Math.max(corners[0][0], corners[1][0])]
  const [top, bottom] = [Math.min(corners[0][1], corners[1][1]), Math.max(corners[0][1], corners[1][1])]
  return [left, top, right - left + 1, bottom - top + 1]
}

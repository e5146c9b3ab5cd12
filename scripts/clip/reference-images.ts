/**
 * The images on which CLIP's preprocessing is compared with Pillow (scripts/clip/record-pillow-reference.py,
 * test/lib/image/clip-pillow.test.ts): the public-domain photos of test/fixtures/photos as mod decodes them, and
 * images made here from plain arithmetic or from copies of those decoded pixels, so that every input is the same
 * bytes on every machine and the only step compared is the resize. Among them: a large mosaic (reduced 9 times,
 * where libvips pre-shrinks with a box filter), a zone plate and seeded noise (detail at every frequency), 1-pixel
 * stripes that alias without a filter, and small images that are enlarged.
 */
import {readdir, readFile} from 'node:fs/promises'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {decodeImage} from '../../src/lib/image/decode.js'
import type {RgbImage} from '../../src/lib/types.js'
import {random} from '../../test/helpers/nsfw-images.js'

export const PHOTOS_DIR = fileURLToPath(new URL('../../test/fixtures/photos/', import.meta.url))

const LIMITS = {maxBytes: 100 * 1024 * 1024, maxPixels: 100_000_000}

export interface ReferenceImage {
  name: string
  image: RgbImage
}

type Rgb = [number, number, number]

function pixels(width: number, height: number, at: (x: number, y: number) => Rgb): RgbImage {
  const data = Buffer.alloc(width * height * 3)
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) data.set(at(x, y), 3 * (y * width + x))
  return {data, width, height}
}

/** Pixel (x, y) of an image, its edge repeated outside it. */
function sample(img: RgbImage, x: number, y: number): Rgb {
  const i = 3 * (Math.min(img.height - 1, y) * img.width + Math.min(img.width - 1, x))
  return [img.data[i], img.data[i + 1], img.data[i + 2]]
}

/** The decoded photos side by side in rows, each copied pixel for pixel (no resampling). */
function mosaic(photos: RgbImage[], columns: number, tile: number): RgbImage {
  const rows = Math.ceil(photos.length / columns)
  return pixels(columns * tile, rows * tile, (x, y) => {
    const photo = photos[(Math.floor(y / tile) * columns + Math.floor(x / tile)) % photos.length]
    return sample(photo, x % tile, y % tile)
  })
}

/** Concentric rings whose frequency grows with the radius, up to the pixel grid's limit at the corners. */
function zonePlate(width: number, height: number): RgbImage {
  const k = Math.PI / Math.hypot(width, height)
  return pixels(width, height, (x, y) => {
    const r2 = (x - width / 2) ** 2 + (y - height / 2) ** 2
    const v = Math.round(127.5 + 127.5 * Math.cos(k * r2))
    return [v, 255 - v, Math.round(v / 2 + 64)]
  })
}

function noise(width: number, height: number, seed: number): RgbImage {
  const next = random(seed)
  return pixels(width, height, () => [Math.floor(next() * 256), Math.floor(next() * 256), Math.floor(next() * 256)])
}

/** A part of an image, copied. */
function cut(img: RgbImage, left: number, top: number, width: number, height: number): RgbImage {
  return pixels(width, height, (x, y) => sample(img, left + x, top + y))
}

/** Black and white columns one pixel wide: the image a resize without a low-pass filter turns into stripes. */
export function stripes(width: number, height: number): RgbImage {
  return pixels(width, height, (x) => (x & 1 ? [255, 255, 255] : [0, 0, 0]))
}

export async function referenceImages(): Promise<ReferenceImage[]> {
  const names = (await readdir(PHOTOS_DIR)).filter((n) => n.endsWith('.jpg')).sort()
  const photos: ReferenceImage[] = []
  for (const n of names) {
    const [image] = await decodeImage(await readFile(join(PHOTOS_DIR, n)), LIMITS)
    photos.push({name: `photo/${n}`, image})
  }
  const decoded = (n: string) => (photos.find((p) => p.name === `photo/${n}`) as ReferenceImage).image
  const made: ReferenceImage[] = [
    {name: 'mosaic-3072x1536', image: mosaic(photos.map((p) => p.image), 6, 512)},
    {name: 'zone-plate-1600x1200', image: zonePlate(1600, 1200)},
    {name: 'noise-1000x750', image: noise(1000, 750, 7)},
    {name: 'stripes-1000x600', image: stripes(1000, 600)},
    {name: 'chelsea-crop-120x90', image: cut(decoded('chelsea.jpg'), 160, 60, 120, 90)},
    {name: 'coffee-crop-61x97', image: cut(decoded('coffee.jpg'), 250, 150, 61, 97)},
    {name: 'gradient-37x51', image: pixels(37, 51, (x, y) => [Math.floor((x * 255) / 37), Math.floor((y * 255) / 51), ((x * y) >> 2) & 255])},
  ]
  return [...photos, ...made]
}

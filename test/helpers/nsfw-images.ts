/**
 * Generated RGB test pictures of varied sizes, aspect ratios and content (gradients, noise, skin-tone fills, a
 * line drawing, stripes), and the photos in test/fixtures/photos/: the image set of the NSFW parity test and
 * of bench/nsfw.ts.
 */
import {readdir, readFile} from 'node:fs/promises'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {DEFAULT_LIMITS} from '../../src/lib/config/settings.js'
import {decodeImage} from '../../src/lib/image/decode.js'
import type {RgbImage} from '../../src/lib/types.js'

export const PHOTOS_DIR = fileURLToPath(new URL('../fixtures/photos/', import.meta.url))

export interface NamedImage {
  name: string
  image: RgbImage
  /** The encoded file, for photos (benchmarks time the decode too). */
  file?: Buffer
}

/** mulberry32: a small seeded generator, so generated images are the same on every run and machine. */
export function random(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

function paint(width: number, height: number, pixel: (x: number, y: number) => [number, number, number]): RgbImage {
  const data = Buffer.alloc(width * height * 3)
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const [r, g, b] = pixel(x, y)
      const o = 3 * (y * width + x)
      data[o] = Math.max(0, Math.min(255, Math.round(r)))
      data[o + 1] = Math.max(0, Math.min(255, Math.round(g)))
      data[o + 2] = Math.max(0, Math.min(255, Math.round(b)))
    }
  }
  return {data, width, height}
}

/** A skin tone (Fitzpatrick III-ish) with soft shading, as a large flat area of a photo would be. */
const SKIN: [number, number, number] = [224, 172, 140]

export function syntheticImages(): NamedImage[] {
  const noise = random(7)
  const grain = random(11)
  return [
    {name: 'gradient 300x200', image: paint(300, 200, (x, y) => [(255 * x) / 299, (255 * y) / 199, 128])},
    {name: 'noise 97x131', image: paint(97, 131, () => [noise() * 256, noise() * 256, noise() * 256])},
    {name: 'skin fill 640x480', image: paint(640, 480, (x, y) => SKIN.map((c) => c - 30 * (y / 480) + 6 * (grain() - 0.5)) as [number, number, number])},
    {
      name: 'skin ellipse 500x700',
      image: paint(500, 700, (x, y) => {
        const d = Math.hypot((x - 250) / 180, (y - 380) / 290)
        const shade = Math.max(0, 1 - d)
        return d < 1 ? (SKIN.map((c) => c * (0.75 + 0.25 * shade)) as [number, number, number]) : [60, 70, 90]
      }),
    },
    {
      name: 'line drawing 400x400',
      image: paint(400, 400, (x, y) => {
        const ring = Math.abs(Math.hypot(x - 200, y - 170) - 110) < 3
        const eye = Math.hypot(x - 160, y - 140) < 12 || Math.hypot(x - 240, y - 140) < 12
        const mouth = Math.abs(Math.hypot(x - 200, y - 170) - 60) < 3 && y > 190
        const body = Math.abs(x - 200) < 3 && y > 280
        return ring || eye || mouth || body ? [20, 20, 20] : [250, 248, 240]
      }),
    },
    {name: 'stripes 1000x120', image: paint(1000, 120, (x) => (Math.floor(x / 50) % 2 === 0 ? [200, 40, 60] : [30, 90, 200]))},
  ]
}

/** The photos of test/fixtures/photos/ (see SOURCES.md there), decoded as mod decodes uploads, by file name. */
export async function fixturePhotos(): Promise<NamedImage[]> {
  const files = (await readdir(PHOTOS_DIR)).filter((f) => f.endsWith('.jpg')).sort()
  return Promise.all(
    files.map(async (name) => {
      const file = await readFile(join(PHOTOS_DIR, name))
      const [image] = await decodeImage(file, DEFAULT_LIMITS)
      return {name, image, file}
    }),
  )
}

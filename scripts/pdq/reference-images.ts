/**
 * The images on which PDQ is compared with the reference implementation: the public-domain photos of
 * test/fixtures/photos, plus images made here (gradients, seeded noise, text, crops, rotations, re-encodings,
 * tiny, flat and large sizes), each decoded by mod's decoder. Everything is deterministic, so the test and
 * scripts/pdq/export-pixels.ts produce the same pixels.
 */
import {readdir, readFile} from 'node:fs/promises'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import sharp, {type Sharp} from 'sharp'

import {decodeImage} from '../../src/lib/image/decode.js'
import type {RgbImage} from '../../src/lib/types.js'
import {random} from '../../test/helpers/nsfw-images.js'

export const PHOTOS_DIR = fileURLToPath(new URL('../../test/fixtures/photos/', import.meta.url))

const LIMITS = {maxBytes: 100 * 1024 * 1024, maxPixels: 100_000_000}

export interface ReferenceImage {
  name: string
  image: RgbImage
  /** The photo file the pixels were decoded from, for comparing decoders. */
  file?: string
}

function pixels(width: number, height: number, at: (x: number, y: number) => [number, number, number]): RgbImage {
  const data = Buffer.alloc(width * height * 3)
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) data.set(at(x, y), 3 * (y * width + x))
  return {data, width, height}
}

function noise(width: number, height: number, seed: number): RgbImage {
  const next = random(seed)
  return pixels(width, height, () => [Math.floor(next() * 256), Math.floor(next() * 256), Math.floor(next() * 256)])
}

/** Encodes with sharp, then decodes as every image path of mod does. */
async function through(image: Sharp): Promise<RgbImage> {
  const [decoded] = await decodeImage(await image.toBuffer(), LIMITS)
  return decoded
}

const raw = (img: RgbImage): Sharp => sharp(img.data, {raw: {width: img.width, height: img.height, channels: 3}})

function text(width: number, height: number, words: string, size: number): Sharp {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><rect width="100%" height="100%" fill="#f4efe1"/><text x="12" y="${size + 8}" font-family="sans-serif" font-size="${size}" fill="#1a2b6d">${words}</text></svg>`
  return sharp(Buffer.from(svg)).png()
}

export async function referenceImages(): Promise<ReferenceImage[]> {
  const names = (await readdir(PHOTOS_DIR)).filter((n) => n.endsWith('.jpg')).sort()
  const photos: ReferenceImage[] = []
  const bytes = new Map<string, Buffer>()
  for (const n of names) {
    const file = join(PHOTOS_DIR, n)
    bytes.set(n, await readFile(file))
    const [image] = await decodeImage(bytes.get(n) as Buffer, LIMITS)
    photos.push({name: `photo/${n}`, image, file})
  }
  const photo = (n: string): Sharp => sharp(bytes.get(n) as Buffer).rotate()
  const made: [string, RgbImage | Promise<RgbImage>][] = [
    ['gradient-horizontal-256x256', pixels(256, 256, (x) => [x, x, x])],
    ['gradient-diagonal-640x480', pixels(640, 480, (x, y) => [(x * 255) / 639, (y * 255) / 479, ((x + y) * 255) / 1118].map(Math.round) as [number, number, number])],
    ['checkerboard-64x64', pixels(64, 64, (x, y) => (((x >> 3) + (y >> 3)) & 1 ? [230, 230, 230] : [20, 20, 20]))],
    ['stripes-301x199', pixels(301, 199, (x) => (Math.floor(x / 7) & 1 ? [200, 40, 40] : [40, 40, 200]))],
    ['flat-grey-100x100', pixels(100, 100, () => [128, 128, 128])],
    ['noise-300x200', noise(300, 200, 1)],
    ['noise-tall-30x2000', noise(30, 2000, 2)],
    ['noise-min-5x5', noise(5, 5, 3)],
    ['noise-too-small-4x40', noise(4, 40, 4)],
    ['noise-7x9', noise(7, 9, 5)],
    ['text-400x120', through(text(400, 120, 'Known bad, by hash', 40))],
    ['text-small-160x40', through(text(160, 40, 'PDQ 256', 22))],
    ['crop-10pct-chelsea', through(photo('chelsea.jpg').extract({left: 30, top: 15, width: 391, height: 270}).png())],
    ['rotate90-astronaut', through(photo('astronaut.jpg').rotate(90).png())],
    ['rotate17-rocket', through(photo('rocket.jpg').rotate(17, {background: '#000000'}).png())],
    ['mirror-coffee', through(photo('coffee.jpg').flop().png())],
    ['large-3000x2000-horse', through(photo('horse.jpg').resize(3000, 2000, {fit: 'fill'}).png())],
    ['odd-1023x767-camera', through(photo('camera.jpg').resize(1023, 767, {fit: 'fill'}).png())],
    ['small-48x32-coins', through(photo('coins.jpg').resize(48, 32, {fit: 'fill'}).png())],
    ['jpeg-q30-brick', through(photo('brick.jpg').jpeg({quality: 30}))],
    ['webp-q80-clock', through(photo('clock_motion.jpg').webp({quality: 80}))],
    ['hue-shift-retina', through(photo('retina.jpg').modulate({hue: 90, saturation: 1.4}).png())],
    ['blur-hubble', through(photo('hubble_deep_field.jpg').blur(3).png())],
    ['alpha-on-white-ihc', through(photo('ihc.jpg').ensureAlpha(0.5).png())],
    ['noise-webp-lossless-640x360', through(raw(noise(640, 360, 6)).webp({lossless: true}))],
  ]
  const generated: ReferenceImage[] = []
  for (const [name, image] of made) generated.push({name, image: await image})
  return [...photos, ...generated]
}

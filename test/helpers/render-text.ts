import {fileURLToPath} from 'node:url'

import sharp from 'sharp'

import type {RgbImage} from '../../src/lib/types.js'

export interface DrawnText {
  text: string
  x: number
  y: number
  size: number
  font?: string
  /** Degrees, clockwise, around the text's start. */
  rotate?: number
  fill?: string
}

const escape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')

/** Text drawn with Debian's DejaVu and Liberation fonts (fonts-dejavu-core, fonts-liberation) onto a plain background. */
export async function renderText(width: number, height: number, lines: DrawnText[], background = 'white'): Promise<RgbImage> {
  const body = lines
    .map(
      (l) =>
        `<text x="${l.x}" y="${l.y}" font-family="${l.font ?? 'DejaVu Sans'}" font-size="${l.size}" fill="${l.fill ?? 'black'}"${l.rotate ? ` transform="rotate(${l.rotate} ${l.x} ${l.y})"` : ''}>${escape(l.text)}</text>`,
    )
    .join('')
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><rect width="100%" height="100%" fill="${background}"/>${body}</svg>`
  const {data, info} = await sharp(Buffer.from(svg)).removeAlpha().raw().toBuffer({resolveWithObject: true})
  return {data, width: info.width, height: info.height}
}

const PHOTOS = new URL('../fixtures/photos/', import.meta.url)

/**
 * The images of the text rules' end-to-end tests: a meme as PNG (a caption with the listed word `zorblax` spelt
 * `Z0RBLAX`, drawn at x 40 with its baseline at y 70, 44 px) and a photo as JPEG (coffee.jpg, 600x400) with an
 * e-mail address written on it in white with a dark outline (x 40, baseline y 360, 30 px).
 */
export async function memeAndPhoto(): Promise<{meme: Buffer; photo: Buffer}> {
  const meme = await renderText(
    600,
    400,
    [
      {text: 'WHEN THE Z0RBLAX', x: 40, y: 70, size: 44, font: 'DejaVu Sans'},
      {text: 'hits different', x: 160, y: 360, size: 36, font: 'DejaVu Sans'},
    ],
    '#ffd24a',
  )
  const caption = `<svg xmlns="http://www.w3.org/2000/svg" width="600" height="400"><text x="40" y="360" font-family="Liberation Sans" font-size="30" fill="white" stroke="black" stroke-width="2" paint-order="stroke">${escape('book now: rentals@lakeside.org')}</text></svg>`
  const photo = await sharp(fileURLToPath(new URL('coffee.jpg', PHOTOS)))
    .composite([{input: Buffer.from(caption)}])
    .jpeg({quality: 90})
    .toBuffer()
  return {meme: await sharp(meme.data, {raw: {width: meme.width, height: meme.height, channels: 3}}).png().toBuffer(), photo}
}

const SHORT_WORDS = ['cat', 'sun', 'blue', 'map', 'tree', 'road', 'fish', 'gold', 'milk', 'door', 'rain', 'star', 'wind', 'boat', 'bell', 'leaf', 'salt', 'ship']

/**
 * A page of 200 short words (25 rows of 8 at 20 px on 1000x820), the most regions the detector keeps; `frame`
 * picks other words (another frame of an animation).
 */
export function wordPage(frame = 0): Promise<RgbImage> {
  const words: DrawnText[] = []
  for (let row = 0; row < 25; row++) {
    for (let col = 0; col < 8; col++) words.push({text: SHORT_WORDS[(row * 8 + col + frame * 5) % SHORT_WORDS.length], x: 20 + col * 120, y: 30 + row * 32, size: 20})
  }
  return renderText(1000, 820, words)
}

/**
 * A document of 100 short lines like a receipt's (`7 fish 9.75`, 16 px, in two columns of 50 on 1000x1000): one the text budget must read whole. Returns the image and its lines, top to bottom, left column first.
 */
export async function receiptPage(): Promise<{img: RgbImage; lines: string[]}> {
  const drawn: DrawnText[] = []
  for (let k = 0; k < 100; k++) {
    const text = `${k + 1} ${SHORT_WORDS[k % SHORT_WORDS.length]} ${(k * 1.25 + 2).toFixed(2)}`
    drawn.push({text, x: 30 + Math.floor(k / 50) * 520, y: 30 + (k % 50) * 19, size: 16, font: 'DejaVu Sans Mono'})
  }
  return {img: await renderText(1000, 1000, drawn), lines: drawn.map((d) => d.text)}
}

/** The frames as an animated GIF; `delay`: each frame's, in milliseconds (absent: the encoder's default). */
export function animatedGif(frames: RgbImage[], delay?: number[]): Promise<Buffer> {
  const {width, height} = frames[0]
  return sharp(Buffer.concat(frames.map((f) => f.data)), {raw: {width, height: height * frames.length, channels: 3, pageHeight: height}})
    .gif(delay ? {delay} : {})
    .toBuffer()
}

/**
 * 36 lines across a 1280x1280 page at 22 px, each wide enough to be read at the recogniser's widest (1280
 * columns): the reading that costs most per line, more than the default text budget holds.
 */
export function longLinePage(): Promise<RgbImage> {
  const sentence = 'the quick brown fox jumps over the lazy dog while the band plays on and on'
  return renderText(1280, 1280, Array.from({length: 36}, (_, k) => ({text: `${k + 1} ${sentence}`, x: 10, y: 30 + k * 34, size: 22})))
}

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

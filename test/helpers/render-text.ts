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

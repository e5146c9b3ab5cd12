/**
 * QR codes and barcodes made by zxing-wasm's writer (its module instantiated from the package's own .wasm file,
 * never fetched) and printed onto the test photos with sharp, each with the upright rectangle its symbol covers:
 * the ground truth of the reading tests.
 */
import {readFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import {fileURLToPath} from 'node:url'

import sharp from 'sharp'
import {prepareZXingModule, writeBarcode, type WriterOptions} from 'zxing-wasm/writer'

import type {RgbImage} from '../../../../src/lib/types.js'

const wasm = readFileSync(createRequire(import.meta.url).resolve('zxing-wasm/writer/zxing_writer.wasm'))
prepareZXingModule({
  overrides: {
    instantiateWasm(imports: WebAssembly.Imports, done: (instance: WebAssembly.Instance) => void) {
      void WebAssembly.instantiate(wasm, imports).then(({instance}) => done(instance))
      return {}
    },
  },
})

export type WriteFormat = NonNullable<WriterOptions['format']>

/** A code's symbol, `scale` pixels a module, with a white margin of `margin` pixels around it (by default 10 modules: a quiet zone wide enough for any format). */
export interface DrawnCode {
  png: Buffer
  width: number
  height: number
  margin: number
}

export async function drawCode(format: WriteFormat, text: string, scale: number, margin = 10 * scale): Promise<DrawnCode> {
  const written = await writeBarcode(text, {format, scale, withQuietZones: false})
  if (written.image === null) throw new Error(`zxing could not write ${format} ${JSON.stringify(text)}: ${written.error}`)
  const png = await sharp(Buffer.from(await written.image.arrayBuffer()))
    .flatten({background: '#ffffff'})
    .extend({top: margin, bottom: margin, left: margin, right: margin, background: '#ffffff'})
    .png()
    .toBuffer()
  const {width, height} = await sharp(png).metadata()
  return {png, width, height, margin}
}

/** A code resized to `side` pixels wide (nearest neighbour: modules stay sharp), margin scaled alike. */
export async function resizeCode(code: DrawnCode, side: number): Promise<DrawnCode> {
  const ratio = side / code.width
  const png = await sharp(code.png).resize(side, Math.round(code.height * ratio), {kernel: 'nearest'}).png().toBuffer()
  const {width, height} = await sharp(png).metadata()
  return {png, width, height, margin: code.margin * ratio}
}

export interface Placed {
  code: DrawnCode
  left: number
  top: number
  /** Degrees, clockwise. */
  angle?: number
}

/** [x0, y0, x1, y1]: the upright rectangle of the symbol in the image, edges in pixels. */
export type Extent = [number, number, number, number]

/** Where the symbol of a placed code lies: its corners turned with the code about the centre. */
async function placedExtent(p: Placed): Promise<{input: Buffer; extent: Extent}> {
  const {code, left, top, angle = 0} = p
  const input = angle === 0 ? code.png : await sharp(code.png).rotate(angle, {background: '#ffffff'}).png().toBuffer()
  const turned = await sharp(input).metadata()
  const rad = (angle * Math.PI) / 180
  const m = code.margin
  const corners = [
    [m, m],
    [code.width - m, m],
    [m, code.height - m],
    [code.width - m, code.height - m],
  ].map(([x, y]) => {
    const dx = x - code.width / 2
    const dy = y - code.height / 2
    return [left + turned.width / 2 + dx * Math.cos(rad) - dy * Math.sin(rad), top + turned.height / 2 + dx * Math.sin(rad) + dy * Math.cos(rad)]
  })
  const xs = corners.map((c) => c[0])
  const ys = corners.map((c) => c[1])
  return {input, extent: [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)]}
}

/** A test photo (test/fixtures/photos) resized to cover width x height, with codes printed on it. */
export async function printOnPhoto(photo: string, width: number, height: number, codes: Placed[]): Promise<{image: RgbImage; extents: Extent[]}> {
  const placed = await Promise.all(codes.map(placedExtent))
  const {data, info} = await sharp(fileURLToPath(new URL(`../../../fixtures/photos/${photo}`, import.meta.url)))
    .resize(width, height, {fit: 'cover'})
    .composite(placed.map((p, i) => ({input: p.input, left: codes[i].left, top: codes[i].top})))
    .removeAlpha()
    .raw()
    .toBuffer({resolveWithObject: true})
  return {image: {data, width: info.width, height: info.height}, extents: placed.map((p) => p.extent)}
}

/** A test photo at its own size, as the engine hands frames to signals. */
export async function photo(name: string): Promise<RgbImage> {
  const {data, info} = await sharp(fileURLToPath(new URL(`../../../fixtures/photos/${name}`, import.meta.url))).removeAlpha().raw().toBuffer({resolveWithObject: true})
  return {data, width: info.width, height: info.height}
}

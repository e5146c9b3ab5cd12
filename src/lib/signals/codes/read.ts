/**
 * Reading QR codes and barcodes in a frame, with zxing-cpp compiled to WebAssembly (the zxing-wasm package, whose
 * npm package ships the `.wasm` file). Each opened reader compiles and instantiates its own module from the
 * package's file, read from disk: zxing-wasm's default would fetch the file from a CDN, so the bytes are handed to
 * the module and nothing is ever fetched. A reader keeps no state outside itself: the library's own cache of
 * modules is emptied as soon as the module is made, and closing the reader lets the module and its memory go.
 *
 * The frame is read as luminance (the weights zxing-wasm itself uses), scaled down by a whole factor, averaging
 * blocks of pixels, when it holds more than `maxPixels`. zxing's options are chosen for the cost bound, about
 * 20 ms for a 1280x720 frame (bench/codes.ts): on such frames, against zxing-wasm's defaults,
 * - `tryHarder` stays on: without it linear barcodes are looked for on 15 rows around the middle only;
 * - `tryRotate` is off: linear barcodes turned 90 degrees are looked for (unless `quarterTurns: false`) in a
 *   second look at half the resolution, the frame transposed so that their bars stand: about 3 ms on 1280x720,
 *   against 40% more time for zxing's own rotation, which scans the whole frame's columns too;
 * - `tryDownscale` is off: it read none of our test codes that the full-size frame missed (large blurred
 *   codes included) and costs about a fifth of the time;
 * - `tryInvert` is off unless asked (`inverted`, which the codes signal asks): light-on-dark codes cost half as
 *   much time again;
 * - `binarizer` stays LocalAverage: a global threshold (GlobalHistogram, a fifth faster) misses codes in the dark
 *   parts of an unevenly lit photo;
 * - only CODE_FORMATS are looked for, not zxing's rarer formats (rMQR, MaxiCode, DataBar, DX film edge, ...).
 * Linear barcodes are read when tilted up to about 15 degrees from upright or from a quarter turn (zxing scans
 * rows and columns; 25 degrees for an EAN-13, whose bars are long for its width); matrix codes at any angle.
 */
import {readFile} from 'node:fs/promises'
import {createRequire} from 'node:module'

import type {ReadInputBarcodeFormat, ZXingReaderModule, ZXingReaderOptions, ZXingReadResult, ZXingVector} from 'zxing-wasm/reader'

/** zxing-wasm's reader bundle, loaded when a reader is first opened: a command whose policy reads no codes never loads it. */
type ZXing = typeof import('zxing-wasm/reader')

import type {RgbImage} from '../../image/rgb.js'
import {CODE_FORMATS, type CodeFormat} from './formats.js'

/** An upright [x, y, width, height] rectangle in the pixels of the image read, whole pixels. */
export type CodeBox = [number, number, number, number]

export interface FoundCode {
  format: CodeFormat
  /**
   * The decoded text, in zxing's human-readable form: control characters of a binary payload written as `<NUL>`,
   * `<SOH>`...; EAN-13, UPC-A and UPC-E as their 13-digit GTIN (a UPC-A's 12 digits after a 0, a UPC-E expanded).
   */
  payload: string
  /** The smallest upright rectangle around the code's corners, clamped to the image. */
  box: CodeBox
}

export interface CodeReaderOptions {
  /** The formats looked for (default: all of CODE_FORMATS). Each one left out saves time. */
  formats?: readonly CodeFormat[]
  /** A frame over this many pixels is scaled down by a whole factor to at most this many before reading. */
  maxPixels?: number
  /** Codes read per frame, at most. */
  maxCodes?: number
  /** Also look for light-on-dark codes (about 1.5 times the time). */
  inverted?: boolean
  /** Also look for linear barcodes turned a quarter, bars lying (default true; about 40% of the time). */
  quarterTurns?: boolean
}

/**
 * 1920x1080: a full-HD frame is read at full size; a 12-megapixel photo at a third of each side (a 120 px code in
 * it is read as a 40 px one, still enough for a small QR code).
 */
export const DEFAULT_MAX_PIXELS = 1920 * 1080
/**
 * Codes read per frame: all of them are checked against the rules (a sheet of 64 codes, one of them denied, is
 * caught wherever that one is), a bound on the reader's memory and time rather than a budget.
 */
export const DEFAULT_MAX_CODES = 256

export interface CodeReader {
  /** The codes in a frame, top to bottom then left to right. */
  read(image: RgbImage): FoundCode[]
  /**
   * The same from the frame's luminance (frameLuminance), boxes in the pixels of the frame it was made from (its
   * `size`): what a reader in another thread is handed, a fraction of the frame's bytes.
   */
  readLuminance(grey: Luminance, size: FrameSize): FoundCode[]
  /** The size of the module's WebAssembly memory, in bytes: it grows with the largest frame read and never shrinks. */
  memoryBytes(): number
  close(): Promise<void>
}

const ZXING_NAMES: Record<CodeFormat, ReadInputBarcodeFormat> = {
  qr_code: 'QRCode',
  micro_qr_code: 'MicroQRCode',
  data_matrix: 'DataMatrix',
  aztec: 'Aztec',
  pdf417: 'PDF417',
  ean_13: 'EAN13',
  ean_8: 'EAN8',
  upc_a: 'UPCA',
  upc_e: 'UPCE',
  code_128: 'Code128',
  code_39: 'Code39',
  code_93: 'Code93',
  itf: 'ITF',
  codabar: 'Codabar',
}

/** The formats zxing may report for what was asked, variants under their family's name. */
const OUR_NAMES: Record<string, CodeFormat> = {
  ...Object.fromEntries(CODE_FORMATS.map((f) => [ZXING_NAMES[f], f])),
  QRCodeModel1: 'qr_code',
  QRCodeModel2: 'qr_code',
  AztecCode: 'aztec',
  AztecRune: 'aztec',
  CompactPDF417: 'pdf417',
  MicroPDF417: 'pdf417',
  ISBN: 'ean_13',
  Code39Std: 'code_39',
  Code39Ext: 'code_39',
  ITF14: 'itf',
}

/**
 * What the reader uses of the Emscripten module: zxing-wasm types it through @types/emscripten's global types,
 * which this project's compiler settings leave out.
 */
type ReaderModule = ZXingReaderModule & {
  _malloc(size: number): number
  _free(at: number): void
  HEAPU8: Uint8Array
}

/** The package's own file, resolved like an import: never a URL. */
const WASM_PATH = createRequire(import.meta.url).resolve('zxing-wasm/reader/zxing_reader.wasm')

/**
 * A module of its own, instantiated from `bytes`. zxing-wasm caches one module per process; asked to make a new
 * one, it caches that instead, so its cache is emptied at once, leaving the module to this reader alone.
 */
async function instantiate({prepareZXingModule, purgeZXingModule}: ZXing, bytes: Uint8Array<ArrayBuffer>): Promise<ReaderModule> {
  const compiled = await WebAssembly.compile(bytes)
  let failed: (e: unknown) => void = () => undefined
  const failure = new Promise<never>((_, reject) => (failed = reject))
  const made = prepareZXingModule({
    overrides: {
      instantiateWasm(imports: WebAssembly.Imports, done: (instance: WebAssembly.Instance) => void) {
        WebAssembly.instantiate(compiled, imports).then(done, failed)
        return {}
      },
    },
    fireImmediately: true,
    equalityFn: () => false,
  })
  purgeZXingModule()
  return Promise.race([made as Promise<ReaderModule>, failure])
}

function zxingOptions(
  {binarizers, characterSets, eanAddOnSymbols, encodeFormats, textModes}: ZXing,
  formats: readonly CodeFormat[],
  maxCodes: number,
  inverted: boolean,
): ZXingReaderOptions {
  return {
    formats: encodeFormats(formats.map((f) => ZXING_NAMES[f])),
    tryHarder: true,
    // Quarter turns are a second look of the reader's own (read below), not zxing's rotation.
    tryRotate: false,
    tryInvert: inverted,
    tryDownscale: false,
    tryDenoise: false,
    binarizer: binarizers.indexOf('LocalAverage'),
    isPure: false,
    downscaleFactor: 3,
    downscaleThreshold: 500,
    minLineCount: 2,
    maxNumberOfSymbols: maxCodes,
    validateOptionalChecksum: false,
    returnErrors: false,
    eanAddOnSymbol: eanAddOnSymbols.indexOf('Ignore'),
    textMode: textModes.indexOf('HRI'),
    characterSet: characterSets.indexOf('Unknown'),
    tryCode39ExtendedMode: true,
  }
}

/** A frame's size in pixels. */
export interface FrameSize {
  width: number
  height: number
}

/** A frame as zxing reads it: one byte of luminance a pixel. */
export interface Luminance {
  data: Uint8Array
  width: number
  height: number
  /** Image pixels per luminance pixel along each side. */
  factor: number
  /** Its x runs down the image and its y across. */
  transposed?: boolean
}

/** The frame's luminance (BT.601 weights in 1/1024), each block of factor x factor pixels averaged. */
export function frameLuminance(image: RgbImage, maxPixels: number): Luminance {
  const {data, width, height} = image
  const factor = Math.max(1, Math.ceil(Math.sqrt((width * height) / maxPixels)))
  const w = Math.ceil(width / factor)
  const h = Math.ceil(height / factor)
  const out = new Uint8Array(w * h)
  if (factor === 1) {
    for (let i = 0, j = 0; i < out.length; i++, j += 3) out[i] = (306 * data[j] + 601 * data[j + 1] + 117 * data[j + 2] + 512) >> 10
    return {data: out, width: w, height: h, factor}
  }
  const block = new Uint32Array(width)
  for (let x = 0; x < width; x++) block[x] = Math.floor(x / factor)
  const sums = new Float64Array(w)
  for (let by = 0; by < h; by++) {
    sums.fill(0)
    const y1 = Math.min(height, (by + 1) * factor)
    for (let y = by * factor; y < y1; y++) {
      for (let x = 0, j = y * width * 3; x < width; x++, j += 3) sums[block[x]] += 306 * data[j] + 601 * data[j + 1] + 117 * data[j + 2]
    }
    const rows = y1 - by * factor
    for (let bx = 0; bx < w; bx++) {
      const cols = Math.min(width, (bx + 1) * factor) - bx * factor
      out[by * w + bx] = Math.round(sums[bx] / (1024 * rows * cols))
    }
  }
  return {data: out, width: w, height: h, factor}
}

/**
 * A luminance frame at half its size, each 2 x 2 block averaged (an odd last row or column stands alone), and
 * transposed: its columns become rows, so that bars lying across the frame stand up (mirrored, which a linear
 * reader reads as well, backwards).
 */
function halveTransposed(grey: Luminance): Luminance {
  const {data, width, height} = grey
  const w = Math.ceil(width / 2)
  const h = Math.ceil(height / 2)
  const out = new Uint8Array(w * h)
  for (let y = 0; y < h; y++) {
    const r0 = 2 * y * width
    const r1 = Math.min(2 * y + 1, height - 1) * width
    for (let x = 0; x < w; x++) {
      const x0 = 2 * x
      const x1 = Math.min(x0 + 1, width - 1)
      out[x * h + y] = (data[r0 + x0] + data[r0 + x1] + data[r1 + x0] + data[r1 + x1] + 2) >> 2
    }
  }
  return {data: out, width: h, height: w, factor: grey.factor * 2, transposed: true}
}

/** The box of zxing's corners (pixels of the luminance), in image pixels: the corner pixels themselves included. */
function boxOf(r: ZXingReadResult, factor: number, image: FrameSize, transposed = false): CodeBox {
  const {topLeft, topRight, bottomLeft, bottomRight} = r.position
  const corners = [topLeft, topRight, bottomLeft, bottomRight]
  const xs = corners.map((c) => (transposed ? c.y : c.x))
  const ys = corners.map((c) => (transposed ? c.x : c.y))
  const clamp = (v: number, max: number) => Math.max(0, Math.min(max, v))
  const x0 = clamp(Math.floor(Math.min(...xs) * factor), image.width - 1)
  const y0 = clamp(Math.floor(Math.min(...ys) * factor), image.height - 1)
  const x1 = clamp(Math.ceil((Math.max(...xs) + 1) * factor), image.width)
  const y1 = clamp(Math.ceil((Math.max(...ys) + 1) * factor), image.height)
  return [x0, y0, Math.max(1, x1 - x0), Math.max(1, y1 - y0)]
}

/**
 * Our name for what zxing read; undefined for a format not asked for. A UPC-A is the EAN-13 whose first digit is
 * 0, and zxing names it so when both are looked for: it is named upc_a all the same.
 */
function named(r: ZXingReadResult, formats: readonly CodeFormat[]): CodeFormat | undefined {
  const format = OUR_NAMES[r.format]
  if (format === 'ean_13' && formats.includes('upc_a') && r.text.startsWith('0')) return 'upc_a'
  return format !== undefined && formats.includes(format) ? format : undefined
}

/** The formats whose bars zxing reads along rows: a quarter turn needs a second look. */
const LINEAR_FORMATS: readonly CodeFormat[] = ['ean_13', 'ean_8', 'upc_a', 'upc_e', 'code_128', 'code_39', 'code_93', 'itf', 'codabar']

/** Opens a reader: compiles the package's WebAssembly file into a module of its own (some 25 ms). */
export async function openCodeReader(options: CodeReaderOptions = {}): Promise<CodeReader> {
  const formats = options.formats ?? CODE_FORMATS
  const maxPixels = options.maxPixels ?? DEFAULT_MAX_PIXELS
  const library = await import('zxing-wasm/reader')
  const maxCodes = options.maxCodes ?? DEFAULT_MAX_CODES
  const inverted = options.inverted ?? false
  const upright = zxingOptions(library, formats, maxCodes, inverted)
  const linear = formats.filter((f) => LINEAR_FORMATS.includes(f))
  const turned = (options.quarterTurns ?? true) && linear.length > 0 ? zxingOptions(library, linear, maxCodes, inverted) : undefined
  let module: ReaderModule | undefined = await instantiate(library, new Uint8Array(await readFile(WASM_PATH)))

  /** The codes zxing reads in a luminance frame with `options`, boxes in the image's pixels. */
  function scan(m: ReaderModule, grey: Luminance, image: FrameSize, options: ZXingReaderOptions): FoundCode[] {
    const at = m._malloc(grey.data.length)
    if (at === 0) throw new Error(`the code reader could not allocate ${grey.data.length} bytes`)
    let results: ZXingVector<ZXingReadResult> & {delete(): void}
    try {
      m.HEAPU8.set(grey.data, at)
      results = m.readBarcodesFromPixmap(at, grey.width, grey.height, options) as typeof results
    } finally {
      m._free(at)
    }
    const found: FoundCode[] = []
    try {
      for (let i = 0; i < results.size(); i++) {
        const r = results.get(i)
        const format = r?.isValid ? named(r, formats) : undefined
        if (r && format) found.push({format, payload: r.text, box: boxOf(r, grey.factor, image, grey.transposed)})
      }
    } finally {
      // The vector holds C++ memory until deleted.
      results.delete()
    }
    return found
  }

  function readLuminance(grey: Luminance, image: FrameSize): FoundCode[] {
    const m = module
    if (m === undefined) throw new Error('the code reader is closed')
    const found = scan(m, grey, image, upright)
    // Linear barcodes turned a quarter, looked for at half the resolution, on the frame transposed so that their
    // bars stand: a quarter of the pixels, bars still wide enough at the sizes codes are printed (zxing's own
    // rotation looks at the whole frame twice more, for 40% more time).
    if (turned) {
      const half = halveTransposed(grey)
      const seen = new Set(found.map((c) => `${c.format}\n${c.payload}`))
      for (const c of scan(m, half, image, turned)) if (!seen.has(`${c.format}\n${c.payload}`)) found.push(c)
    }
    return found.sort((a, b) => a.box[1] - b.box[1] || a.box[0] - b.box[0])
  }

  return {
    read: (image) => readLuminance(frameLuminance(image, maxPixels), image),
    readLuminance,
    memoryBytes: () => module?.HEAPU8.length ?? 0,
    async close() {
      module = undefined
    },
  }
}

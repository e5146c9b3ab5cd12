import {readdirSync} from 'node:fs'

import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {openCodeReader, type CodeBox, type CodeReader} from '../../../../src/lib/signals/codes/read.js'
import type {RgbImage} from '../../../../src/lib/types.js'
import {drawCode, photo, printOnPhoto, resizeCode, type DrawnCode, type Extent, type WriteFormat} from './draw.js'

let reader: CodeReader

test.before(async () => {
  reader = await openCodeReader()
})

test.after(async () => {
  await reader.close()
})

/** The box holds the symbol (within `slack` pixels: edges of turned codes are interpolated) and little else. */
function assertAround(box: CodeBox, extent: Extent, slack = 2): void {
  const [x, y, w, h] = box
  const [x0, y0, x1, y1] = extent
  const what = `box ${JSON.stringify(box)} around [${extent.map((v) => v.toFixed(1)).join(', ')}]`
  assert.ok(x <= x0 + slack && y <= y0 + slack && x + w >= x1 - slack && y + h >= y1 - slack, `${what}: holds the symbol`)
  assert.ok(x >= x0 - slack && y >= y0 - slack && x + w <= x1 + slack && y + h <= y1 + slack, `${what}: and little else`)
}

/**
 * For a linear barcode the box spans the rows where its bars were read: the guard bars that reach below the
 * others (EAN, UPC) may stay out. It lies within the symbol and covers most of it.
 */
function assertAcross(box: CodeBox, extent: Extent, share = 0.85, slack = 2): void {
  const [x, y, w, h] = box
  const [x0, y0, x1, y1] = extent
  const what = `box ${JSON.stringify(box)} across [${extent.map((v) => v.toFixed(1)).join(', ')}]`
  assert.ok(x >= x0 - slack && y >= y0 - slack && x + w <= x1 + slack && y + h <= y1 + slack, `${what}: within the symbol`)
  assert.ok((w * h) / ((x1 - x0) * (y1 - y0)) >= share, `${what}: covers ${share * 100}% of it`)
}

test('reads a QR code printed on a photo: its format, its payload and a box around it', async () => {
  const qr = await drawCode('QRCode', 'https://evil.example/promo?id=7', 4)
  const {image, extents} = await printOnPhoto('coffee.jpg', 1280, 720, [{code: qr, left: 500, top: 300}])
  const found = reader.read(image)
  assert.equal(
    found.map((c) => [c.format, c.payload]),
    [['qr_code', 'https://evil.example/promo?id=7']],
  )
  assertAround(found[0].box, extents[0], 1)
})

test('reads QR codes turned 30 and 90 degrees, and one 60 pixels wide', async () => {
  const qr = await drawCode('QRCode', 'https://evil.example/promo', 4)
  const small = await resizeCode(await drawCode('QRCode', 'https://t.me/x', 3), 60)
  for (const [code, angle] of [
    [qr, 30],
    [qr, 90],
    [small, 0],
  ] as [DrawnCode, number][]) {
    const {image, extents} = await printOnPhoto('chelsea.jpg', 640, 480, [{code, left: 200, top: 120, angle}])
    const found = reader.read(image)
    assert.equal(found.map((c) => c.format), ['qr_code'], `${code.width} px at ${angle} degrees`)
    assert.is(found[0].payload, code === small ? 'https://t.me/x' : 'https://evil.example/promo')
    assertAround(found[0].box, extents[0])
  }
})

test('reads an EAN-13 and a Code 128, upright, tilted 10 degrees and turned a quarter', async () => {
  const ean = await drawCode('EAN13', '4006381333931', 2)
  const code128 = await drawCode('Code128', 'PARCEL-0042', 2)
  for (const angle of [0, 10, 90]) {
    const {image, extents} = await printOnPhoto('brick.jpg', 800, 800, [
      {code: ean, left: 40, top: 40, angle},
      {code: code128, left: 360, top: 360, angle},
    ])
    const found = reader.read(image)
    assert.equal(
      found.map((c) => [c.format, c.payload]),
      [
        ['ean_13', '4006381333931'],
        ['code_128', 'PARCEL-0042'],
      ],
      `at ${angle} degrees`,
    )
    // Tilted, the rows where the bars were read cover a band of the turned symbol's upright extent.
    if (angle !== 10) found.forEach((c, i) => assertAcross(c.box, extents[i]))
  }
})

test('reads several codes in one photo, each with its own box, top to bottom then left to right', async () => {
  const codes = [
    {code: await drawCode('QRCode', 'first', 4), left: 60, top: 40},
    {code: await drawCode('DataMatrix', 'lot 7', 4), left: 1000, top: 60},
    {code: await drawCode('QRCode', 'https://second.example', 3), left: 600, top: 250, angle: 45},
    {code: await resizeCode(await drawCode('QRCode', 'third', 3), 60), left: 120, top: 420},
    {code: await drawCode('Aztec', 'ticket 12', 4), left: 1000, top: 500},
  ]
  const {image, extents} = await printOnPhoto('horse.jpg', 1280, 720, codes)
  const found = reader.read(image)
  assert.equal(
    found.map((c) => [c.format, c.payload]),
    [
      ['qr_code', 'first'],
      ['data_matrix', 'lot 7'],
      ['qr_code', 'https://second.example'],
      ['qr_code', 'third'],
      ['aztec', 'ticket 12'],
    ],
  )
  found.forEach((c, i) => assertAround(c.box, extents[i]))
})

test('reads a code in the dark corner of an unevenly lit photo', async () => {
  const {image} = await printOnPhoto('coffee.jpg', 1280, 720, [{code: await drawCode('QRCode', 'dark corner', 3), left: 1130, top: 560}])
  // Light falling off towards the bottom right corner, to 15% there.
  for (let y = 0, j = 0; y < image.height; y++) {
    for (let x = 0; x < image.width; x++, j += 3) {
      const light = 1 - (0.85 * x * y) / (image.width * image.height)
      for (let c = 0; c < 3; c++) image.data[j + c] = Math.round(image.data[j + c] * light)
    }
  }
  assert.equal(reader.read(image).map((c) => c.payload), ['dark corner'])
})

/** What each format reads as, written by zxing on white. */
async function readOnWhite(format: WriteFormat, text: string, r: CodeReader = reader): Promise<[string, string][]> {
  const code = await drawCode(format, text, 3)
  const {data, info} = await sharp({create: {width: code.width + 40, height: code.height + 40, channels: 3, background: '#ffffff'}})
    .composite([{input: code.png, left: 20, top: 20}])
    .removeAlpha()
    .raw()
    .toBuffer({resolveWithObject: true})
  return r.read({data, width: info.width, height: info.height}).map((c) => [c.format, c.payload])
}

test('names each format it reads with a stable lowercase name, EAN-13 and UPC payloads as 13-digit GTINs', async () => {
  const cases: [WriteFormat, string, string, string][] = [
    ['QRCode', 'qr', 'qr_code', 'qr'],
    ['MicroQRCode', 'MQR1', 'micro_qr_code', 'MQR1'],
    ['DataMatrix', 'dm', 'data_matrix', 'dm'],
    ['Aztec', 'az', 'aztec', 'az'],
    ['PDF417', 'pdf', 'pdf417', 'pdf'],
    ['EAN13', '4006381333931', 'ean_13', '4006381333931'],
    ['EAN8', '96385074', 'ean_8', '96385074'],
    ['UPCA', '036000291452', 'upc_a', '0036000291452'],
    ['UPCE', '01234565', 'upc_e', '0012345000065'],
    ['Code128', 'Code 128', 'code_128', 'Code 128'],
    ['Code39', 'CODE-39', 'code_39', 'CODE-39'],
    ['Code93', 'CODE93', 'code_93', 'CODE93'],
    ['ITF', '12345678', 'itf', '12345678'],
    ['Codabar', 'A123456A', 'codabar', 'A123456A'],
  ]
  for (const [format, text, name, payload] of cases) assert.equal(await readOnWhite(format, text), [[name, payload]], format)
})

test('reads only the formats asked for', async () => {
  const only = await openCodeReader({formats: ['qr_code']})
  try {
    assert.equal(await readOnWhite('EAN13', '4006381333931', only), [])
    assert.equal(await readOnWhite('QRCode', 'yes', only), [['qr_code', 'yes']])
    // Without ean_13, a UPC-A is still a upc_a.
    const upc = await openCodeReader({formats: ['upc_a']})
    assert.equal(await readOnWhite('UPCA', '036000291452', upc), [['upc_a', '0036000291452']])
    await upc.close()
  } finally {
    await only.close()
  }
})

test('finds no code in the test photos', async () => {
  const names = readdirSync(new URL('../../../fixtures/photos/', import.meta.url)).filter((f) => f.endsWith('.jpg'))
  assert.ok(names.length >= 10)
  for (const name of names) assert.equal(reader.read(await photo(name)), [], name)
})

test('reads a frame over maxPixels scaled down, and gives the box in the frame pixels', async () => {
  // Halved (odd sides: the last column and row of blocks are half blocks).
  const scaled = await openCodeReader({maxPixels: 642 * 361})
  try {
    const qr = await drawCode('QRCode', 'https://evil.example/big', 8)
    const {image, extents} = await printOnPhoto('rocket.jpg', 1283, 721, [{code: qr, left: 301, top: 151}])
    const found = scaled.read(image)
    assert.equal(found.map((c) => c.payload), ['https://evil.example/big'])
    // Read at half size: each edge is known to within 2 pixels of the frame.
    assertAround(found[0].box, extents[0], 3)
  } finally {
    await scaled.close()
  }
})

test('reads at most maxCodes codes in a frame', async () => {
  const two = await openCodeReader({maxCodes: 2})
  try {
    const codes = await Promise.all(['a', 'b', 'c'].map((t) => drawCode('QRCode', t, 4)))
    const {image} = await printOnPhoto('coffee.jpg', 900, 300, codes.map((code, i) => ({code, left: 40 + i * 300, top: 60})))
    assert.is(reader.read(image).length, 3)
    assert.is(two.read(image).length, 2)
  } finally {
    await two.close()
  }
})

test('without quarterTurns, a linear barcode turned a quarter is missed; a QR code turned so is still read', async () => {
  const upright = await openCodeReader({quarterTurns: false})
  try {
    const {image} = await printOnPhoto('brick.jpg', 800, 800, [
      {code: await drawCode('Code128', 'PARCEL-0042', 2), left: 40, top: 40, angle: 90},
      {code: await drawCode('QRCode', 'turned', 4), left: 400, top: 400, angle: 90},
    ])
    assert.equal(reader.read(image).map((c) => c.payload), ['PARCEL-0042', 'turned'])
    assert.equal(upright.read(image).map((c) => c.payload), ['turned'])
  } finally {
    await upright.close()
  }
})

test('reads light-on-dark codes only when asked', async () => {
  const code = await drawCode('QRCode', 'inverted', 4)
  const {data, info} = await sharp(code.png).negate().removeAlpha().raw().toBuffer({resolveWithObject: true})
  const image: RgbImage = {data, width: info.width, height: info.height}
  const inverted = await openCodeReader({inverted: true})
  try {
    assert.equal(reader.read(image), [])
    assert.equal(inverted.read(image).map((c) => c.payload), ['inverted'])
  } finally {
    await inverted.close()
  }
})

test('each reader has a module of its own: a closed one refuses to read, the others still read', async () => {
  const a = await openCodeReader()
  const b = await openCodeReader()
  const code = await drawCode('QRCode', 'still here', 4)
  const {image} = await printOnPhoto('coffee.jpg', 400, 300, [{code, left: 100, top: 50}])
  assert.is(a.read(image).length, 1)
  await a.close()
  assert.throws(() => a.read(image), /the code reader is closed/)
  assert.is(a.memoryBytes(), 0)
  assert.equal(b.read(image).map((c) => c.payload), ['still here'])
  assert.ok(b.memoryBytes() > 0)
  await b.close()
})

test.run()

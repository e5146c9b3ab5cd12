import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {detectorInput, detectorSize} from '../../../../src/lib/signals/text/preprocess.js'

/** Pixels with every level and sharp edges: any difference in the resize shows. */
function pattern(width: number, height: number): Buffer {
  const data = Buffer.alloc(width * height * 3)
  for (let i = 0; i < data.length; i++) data[i] = (i * 2654435761) >>> 24
  return data
}

/** The detector's tensor from libvips' resize (Lanczos-3), in BGR planes with ImageNet's normalisation. */
async function libvipsTensor(data: Buffer, width: number, height: number, size: {width: number; height: number}): Promise<Float32Array> {
  const pixels = await sharp(data, {raw: {width, height, channels: 3}}).resize(size.width, size.height, {fit: 'fill'}).raw().toBuffer()
  const mean = [0.485, 0.456, 0.406]
  const std = [0.229, 0.224, 0.225]
  const plane = size.width * size.height
  const tensor = new Float32Array(3 * plane)
  for (let c = 0; c < 3; c++) {
    for (let i = 0; i < plane; i++) tensor[c * plane + i] = (pixels[3 * i + 2 - c] / 255 - mean[c]) / std[c]
  }
  return tensor
}

test("the detector's input is libvips' resize of the image, enlarged (up to twice) or reduced", async () => {
  for (const [width, height] of [
    [500, 375], // enlarged to 736 x 544
    [320, 240], // enlarged twice
    [97, 61],
    [1500, 1000], // reduced
  ]) {
    const data = pattern(width, height)
    const size = detectorSize(width, height, 736)
    const got = await detectorInput({data, width, height}, 736)
    assert.equal([got.width, got.height], [size.width, size.height])
    assert.equal(got.tensor, await libvipsTensor(data, width, height, size), `${width}x${height}`)
  }
})

test.run()

import {join} from 'node:path'

import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {openCodeReader} from '../../../../src/lib/signals/codes/read.js'
import {decodeFrames} from '../../../../src/lib/video/frames.js'
import {decodeOptions, ffmpeg, tempDir} from '../../video/helpers.js'
import {drawCode, printOnPhoto} from './draw.js'

const tmp = tempDir()
test.after(() => tmp.remove())

test('reads the codes of H.264 video frames as the engine decodes them (sampled, scaled to a shorter side of 448 px)', async () => {
  const {image, extents} = await printOnPhoto('rocket.jpg', 1280, 720, [
    {code: await drawCode('QRCode', 'https://evil.example/v', 6), left: 120, top: 200},
    {code: await drawCode('EAN13', '4006381333931', 5), left: 600, top: 300},
  ])
  const still = join(tmp.dir, 'still.png')
  const clip = join(tmp.dir, 'clip.mp4')
  await sharp(image.data, {raw: {width: image.width, height: image.height, channels: 3}}).png().toFile(still)
  await ffmpeg('-loop', '1', '-i', still, '-t', '2', '-r', '10', '-c:v', 'libx264', '-pix_fmt', 'yuv420p', clip)

  const reader = await openCodeReader()
  try {
    let frames = 0
    for await (const {image: frame} of decodeFrames(clip, decodeOptions())) {
      frames++
      assert.equal([frame.width, frame.height], [796, 448])
      const found = reader.read(frame)
      assert.equal(
        found.map((c) => [c.format, c.payload]),
        [
          ['qr_code', 'https://evil.example/v'],
          ['ean_13', '4006381333931'],
        ],
      )
      // The QR code's box, in the frame's pixels (448 / 720 of the clip's), within 2 pixels of where it was drawn.
      const [x, y, w, h] = found[0].box
      const [x0, y0, x1, y1] = extents[0].map((v) => (v * 448) / 720)
      for (const [got, want] of [
        [x, x0],
        [y, y0],
        [x + w, x1],
        [y + h, y1],
      ]) {
        assert.ok(Math.abs(got - want) <= 2, `box ${JSON.stringify(found[0].box)} against [${[x0, y0, x1, y1].join(', ')}]`)
      }
    }
    assert.is(frames, 2)
  } finally {
    await reader.close()
  }
})

test.run()

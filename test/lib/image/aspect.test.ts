import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {aspectBox, limitAspect, MAX_ASPECT_RATIO} from '../../../src/lib/image/aspect.js'
import {resizedSize} from '../../../src/lib/image/preprocess.js'

/** width x height RGB where every pixel holds its own column and row (mod 256). */
function numbered(width: number, height: number) {
  const data = Buffer.alloc(3 * width * height)
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) data.set([x % 256, y % 256, 7], 3 * (y * width + x))
  }
  return {data, width, height}
}

test('an image up to MAX_ASPECT_RATIO : 1 either way is kept whole', () => {
  for (const [w, h] of [[1, 1], [20, 1], [1, 20], [1920, 96], [96, 1920], [4000, 3000]]) {
    assert.equal(aspectBox(w, h), {left: 0, top: 0, width: w, height: h}, `${w}x${h}`)
  }
  const img = numbered(40, 2)
  assert.is(limitAspect(img), img)
})

test('a longer image keeps its centre part of MAX_ASPECT_RATIO : 1, floored on the left and top', () => {
  assert.equal(aspectBox(21, 1), {left: 0, top: 0, width: 20, height: 1})
  assert.equal(aspectBox(100_000, 1), {left: 49_990, top: 0, width: 20, height: 1})
  assert.equal(aspectBox(3, 65_535), {left: 0, top: 32_737, width: 3, height: 60})
  assert.equal(aspectBox(10, 5, 1.5), {left: 1, top: 0, width: 7, height: 5})
})

test('limitAspect copies the centre columns of a wide sliver and views the centre rows of a tall one', () => {
  const wide = limitAspect(numbered(45, 2))
  assert.equal([wide.width, wide.height], [40, 2])
  assert.equal(wide.data, Buffer.concat([numbered(45, 2).data.subarray(3 * 2, 3 * 42), numbered(45, 2).data.subarray(3 * 47, 3 * 87)]))
  const tall = numbered(2, 45)
  const cut = limitAspect(tall)
  assert.equal([cut.width, cut.height], [2, 40])
  assert.equal(cut.data, tall.data.subarray(3 * 2 * 2, 3 * 2 * 42))
})

test("bounded frames bound CLIP's resized image: at most 224 x (224 x MAX_ASPECT_RATIO) for every shape", () => {
  let largest = 0
  for (const long of [1, 7, 224, 4480, 4481, 65_535]) {
    for (const short of [1, 2, 3, 223, 225]) {
      for (const [w, h] of [[long, short], [short, long]]) {
        const box = aspectBox(w, h)
        const r = resizedSize(box.width, box.height, 224)
        largest = Math.max(largest, r.width * r.height)
      }
    }
  }
  assert.is(largest, 224 * 224 * MAX_ASPECT_RATIO)
})

test.run()

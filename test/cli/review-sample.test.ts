import {createHash} from 'node:crypto'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {reviewSample} from '../../src/cli/reports/review-sample.js'

const sha = (s: string) => createHash('sha256').update(s).digest('hex')
const images = Array.from({length: 200}, (_, i) => ({name: `img-${i}.png`, sha256: sha(`bytes of image ${i}`)}))

function sampleOf(list: typeof images, size: number): string[] {
  const s = reviewSample<string>(size)
  for (const image of list) s.offer(image.sha256, image.name)
  return s.chosen()
}

test('the sample depends on the images, not on their order; a larger one keeps the smaller', () => {
  const ten = sampleOf(images, 10)
  assert.is(ten.length, 10)
  assert.is(new Set(ten).size, 10)
  assert.equal(sampleOf([...images].reverse(), 10), ten)
  const shuffled = [...images].sort((a, b) => (a.sha256 < b.sha256 ? -1 : 1))
  assert.equal(sampleOf(shuffled, 10), ten)
  assert.equal(sampleOf(images, 25).slice(0, 10), ten)
})

test('an image added enters only in place of one ranked above it; fewer images than N keeps them all', () => {
  const ten = sampleOf(images, 10)
  const more = sampleOf([...images, {name: 'new.png', sha256: sha('a new image')}], 10)
  assert.ok(more.filter((n) => !ten.includes(n)).length <= 1)
  assert.equal(new Set(sampleOf(images.slice(0, 5), 10)), new Set(images.slice(0, 5).map((i) => i.name)))
  assert.equal(sampleOf(images, 0), [])
})

test('the sample is not the first part of calibrate\'s seeded split', () => {
  // isHeldOut ranks by sha256("1:" + sha256): a sample by that rank would be all held out at --holdout 0.3.
  const heldOut = (h: string) => createHash('sha256').update(`1:${h}`).digest().readUInt32BE(0) / 2 ** 32 < 0.3
  const chosen = new Set(sampleOf(images, 20))
  const held = images.filter((i) => chosen.has(i.name) && heldOut(i.sha256)).length
  assert.ok(held > 0 && held < 20, `${held} of 20 held out`)
})

test.run()

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {openTextModel, type TextModel} from '../../../../src/lib/signals/text/model.js'
import {readText} from '../../../../src/lib/signals/text/read.js'
import {renderText} from '../../../helpers/render-text.js'

const model = await openTextModel({threads: 1})
test.after(() => model.close())

test('reads rendered lines in reading order with their boxes in image pixels', async () => {
  const img = await renderText(800, 300, [
    {text: 'Buy cheap watches now', x: 40, y: 80, size: 40},
    {text: 'write to sales@example.com today', x: 40, y: 160, size: 24, font: 'Liberation Serif'},
  ])
  const [lines] = await readText(model, [img])
  assert.equal(
    lines.map((l) => l.text),
    ['Buy cheap watches now', 'write to sales@example.com today'],
  )
  for (const l of lines) assert.ok(l.confidence > 0.9, `${l.text}: ${l.confidence}`)
  // The first line's glyphs span x ≈ 42..520 and y ≈ 50..89 at 40 px.
  const b = lines[0].box
  assert.ok(b.x >= 30 && b.x <= 48 && b.y >= 40 && b.y <= 56 && b.x + b.width >= 515 && b.x + b.width <= 535 && b.y + b.height >= 86 && b.y + b.height <= 100, JSON.stringify(b))
})

test('reads a line tilted by 10 degrees, and frames batched together keep their own lines', async () => {
  const tilted = await renderText(640, 360, [{text: 'FREE SHIPPING', x: 60, y: 200, size: 44, rotate: -10}], '#f3e9c6')
  const blank = await renderText(320, 200, [])
  const plain = await renderText(400, 120, [{text: 'hello world', x: 20, y: 70, size: 32, font: 'Liberation Sans'}])
  const read = await readText(model, [tilted, blank, plain])
  assert.equal(
    read.map((lines) => lines.map((l) => l.text)),
    [['FREE SHIPPING'], [], ['hello world']],
  )
})

test('lines share a recogniser run only with lines of nearly their width, so that little is padded', async () => {
  const img = await renderText(900, 400, [
    {text: 'Buy cheap watches now', x: 40, y: 80, size: 32},
    {text: 'Buy cheap watches now', x: 40, y: 180, size: 32},
    {text: 'Sale', x: 40, y: 300, size: 32},
  ])
  const runs: [number, number][] = []
  const watched: TextModel = {...model, recognise: (tensor, n, width) => (runs.push([n, width]), model.recognise(tensor, n, width))}
  const [lines] = await readText(watched, [img])
  assert.equal(
    lines.map((l) => l.text),
    ['Buy cheap watches now', 'Buy cheap watches now', 'Sale'],
  )
  // The short line alone, then the two long ones together (the narrowest first).
  assert.equal(
    runs.map(([n]) => n),
    [1, 2],
  )
  assert.ok(runs[0][1] * 3 < runs[1][1], JSON.stringify(runs))
})

test.run()

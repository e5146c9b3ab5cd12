import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {openTextModel, type TextModel} from '../../../../src/lib/signals/text/model.js'
import {lineWidth} from '../../../../src/lib/signals/text/preprocess.js'
import {DEFAULT_READ_OPTIONS, DEFAULT_TEXT_BUDGET, detectLines, paddedWidth, readText, recogniseLines, withinBudget, type TextLine} from '../../../../src/lib/signals/text/read.js'
import {longLinePage, receiptPage, renderText, wordPage} from '../../../helpers/render-text.js'

const model = await openTextModel({threads: 1})
test.after(() => model.close())

test('reads rendered lines in reading order with their boxes in image pixels', async () => {
  const img = await renderText(800, 300, [
    {text: 'Buy cheap watches now', x: 40, y: 80, size: 40},
    {text: 'write to sales@example.com today', x: 40, y: 160, size: 24, font: 'Liberation Serif'},
  ])
  const [{lines, truncated}] = await readText(model, [img])
  assert.equal(
    lines.map((l) => l.text),
    ['Buy cheap watches now', 'write to sales@example.com today'],
  )
  assert.is(truncated, false)
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
    read.map((f) => f.lines.map((l) => l.text)),
    [['FREE SHIPPING'], [], ['hello world']],
  )
})

test('a line is padded to a width of its own: the next step of a series growing by 10% from 16, in multiples of 4', () => {
  assert.equal(
    [1, 16, 17, 40, 41, 100, 1000, 1279, 5000].map((w) => paddedWidth(w, 1280, 1.1)),
    [16, 16, 20, 40, 44, 108, 1004, 1280, 1280],
  )
})

test('an image reads the same text with the same confidences alone, line by line, and among lines of other widths', async () => {
  const words = ['Sale', 'cheap watches', 'write to sales@example.com', 'free shipping on every order today', 'OPEN']
  const draw = async (size: number, dx = 0) => {
    const img = await renderText(900, 460, words.map((text, i) => ({text, x: 30 + dx, y: 60 + i * 90, size: size + i * 2, font: i % 2 ? 'Liberation Serif' : 'DejaVu Sans'})))
    return {img, boxes: (await detectLines(model, img)).boxes}
  }
  const item = await draw(24)
  // Neighbours whose lines are a few per cent wider or narrower share runs with this image's lines.
  const [wider, narrower, shifted] = [await draw(25), await draw(22), await draw(23, 7)]
  const seen = (lines: TextLine[]) => lines.map((l) => [l.text, l.confidence])
  const [alone] = await recogniseLines(model, [item])
  assert.is(alone.length, words.length)
  const [oneByOne] = await recogniseLines(model, [item], {...DEFAULT_READ_OPTIONS, batch: 1})
  const [, among] = await recogniseLines(model, [wider, item, shifted])
  const [, , amongMore] = await recogniseLines(model, [narrower, wider, item, shifted])
  assert.equal(seen(oneByOne), seen(alone))
  assert.equal(seen(among), seen(alone))
  assert.equal(seen(amongMore), seen(alone))
})

test('lines share a recogniser run only with lines of their padded width, so that little is padded', async () => {
  const img = await renderText(900, 400, [
    {text: 'Buy cheap watches now', x: 40, y: 80, size: 32},
    {text: 'Buy cheap watches now', x: 40, y: 180, size: 32},
    {text: 'Sale', x: 40, y: 300, size: 32},
  ])
  const runs: [number, number][] = []
  const watched: TextModel = {...model, recognise: (tensor, n, width) => (runs.push([n, width]), model.recognise(tensor, n, width))}
  const [{lines}] = await readText(watched, [img])
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

test('a recogniser run holds at most runColumns columns, so that none holds up the event loop for long', async () => {
  const img = await renderText(700, 560, [0, 1, 2, 3, 4].map((k) => ({text: 'Buy cheap watches now', x: 40, y: 80 + k * 100, size: 32})))
  const runs: [number, number][] = []
  const watched: TextModel = {...model, recognise: (tensor, n, width) => (runs.push([n, width]), model.recognise(tensor, n, width))}
  const [whole] = await readText(watched, [img], {...DEFAULT_READ_OPTIONS, runColumns: 100_000})
  assert.ok(runs.some(([n]) => n >= 3), JSON.stringify(runs))
  const runColumns = 2 * Math.max(...runs.map(([, width]) => width)) + 1
  runs.length = 0
  const [split] = await readText(watched, [img], {...DEFAULT_READ_OPTIONS, runColumns})
  assert.ok(
    runs.every(([n, width]) => n <= 2 && n * width <= runColumns),
    JSON.stringify(runs),
  )
  assert.is(runs.reduce((sum, [n]) => sum + n, 0), 5)
  assert.equal(split, whole)
})

test('a document of 100 short lines, like a long receipt, reads whole within the default budget', async () => {
  const {img, lines: drawn} = await receiptPage()
  const [{lines, truncated}] = await readText(model, [img])
  assert.is(truncated, false)
  const read = new Set(lines.map((l) => l.text))
  assert.ok(drawn.filter((l) => read.has(l)).length >= 95, JSON.stringify(drawn.filter((l) => !read.has(l))))
})

test('a page of lines as wide as the recogniser reads spends the budget in recogniser columns, and says that reading stopped early', async () => {
  const columns: number[] = []
  const watched: TextModel = {...model, recognise: (tensor, n, width) => (columns.push(n * width), model.recognise(tensor, n, width))}
  const page = await longLinePage()
  const [{lines, truncated}] = await readText(watched, [page])
  assert.is(truncated, true)
  const spent = columns.reduce((a, b) => a + b)
  // 36 lines of 1280 columns drawn; the budget holds 25 of them.
  assert.is(DEFAULT_READ_OPTIONS.budget.columns, DEFAULT_TEXT_BUDGET)
  assert.ok(spent <= DEFAULT_TEXT_BUDGET && spent > DEFAULT_TEXT_BUDGET - 1280, `${spent} columns`)
  assert.ok(lines.length >= 23 && lines.length <= 25, `${lines.length} lines`)
  // The first lines in reading order.
  assert.ok(lines.every((l) => l.box.y < 26 * 34), JSON.stringify(lines.map((l) => [l.text, l.box.y])))
})

const page = await wordPage()

test('a budget in columns keeps the first boxes in reading order whose padded widths fit', async () => {
  const {boxes} = await detectLines(model, page)
  assert.ok(boxes.length > 150, `${boxes.length} regions`)
  const widths = boxes.map((b) => paddedWidth(lineWidth(b, 1280), 1280, 1.1))
  const kept = withinBudget(boxes, {columns: 500})
  const used = widths.slice(0, kept.length).reduce((a, b) => a + b, 0)
  assert.equal(kept, boxes.slice(0, kept.length))
  assert.ok(kept.length > 2 && used <= 500 && used + widths[kept.length] > 500, `${kept.length} boxes, ${used} columns`)
  // The count of lines does not matter: 200 short words fit in the default budget.
  assert.equal(withinBudget(boxes, {columns: DEFAULT_TEXT_BUDGET}), boxes)
})

test.run()

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {textBlocks} from '../../../src/lib/rules/blocks.js'

const at = (name: string, x: number, y: number, width: number, height = 40) => ({name, box: {x, y, width, height}})
const names = (blocks: {name: string}[][]) => blocks.map((b) => b.map((l) => l.name))

test('stacked lines of one size form a block read top to bottom, whatever order they come in', () => {
  assert.equal(names(textBlocks([at('pills', 12, 100, 80), at('buy', 10, 10, 60), at('cheap', 8, 55, 100)])), [['buy', 'cheap', 'pills']])
})

test('pieces of one row join left to right; a wide gap or another row starts another block', () => {
  assert.equal(names(textBlocks([at('pills', 250, 12, 80), at('buy', 10, 10, 60), at('cheap', 100, 8, 110)])), [['buy', 'cheap', 'pills']])
  assert.equal(names(textBlocks([at('right', 500, 10, 100), at('left', 10, 10, 100)])), [['left'], ['right']])
})

test('a title far above a caption, small print under a headline, and side-by-side columns stay apart, in reading order', () => {
  assert.equal(names(textBlocks([at('caption', 10, 300, 200), at('title', 10, 10, 200)])), [['title'], ['caption']])
  assert.equal(names(textBlocks([at('headline', 10, 10, 300, 80), at('small print', 10, 95, 300, 20)])), [['headline'], ['small print']])
  assert.equal(
    names(textBlocks([at('b1', 400, 10, 150), at('a1', 10, 10, 150), at('b2', 400, 55, 150), at('a2', 10, 55, 150)])),
    [['a1', 'a2'], ['b1', 'b2']],
  )
})

test('no lines, no blocks', () => {
  assert.equal(textBlocks([]), [])
})

test.run()

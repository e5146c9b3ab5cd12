import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {openTextSignal} from '../../../../src/lib/signals/text/signal.js'
import {renderText} from '../../../helpers/render-text.js'

test('a listed phrase drawn at 40 px is found on one line and stacked over three, once per image', async () => {
  const signal = await openTextSignal({video: false, rules: [{name: 'pills', category: 'drugs', words: ['buy cheap pills']}]}, {threads: 1})
  try {
    const line = await renderText(600, 200, [{text: 'buy cheap pills', x: 30, y: 100, size: 40}])
    const poster = await renderText(400, 300, [
      {text: 'buy', x: 40, y: 100, size: 40},
      {text: 'cheap', x: 40, y: 150, size: 40},
      {text: 'pills', x: 40, y: 200, size: 40},
    ])
    const r = await signal.read([line, poster])
    assert.equal(r.lines[1].length, 3)
    assert.equal(
      r.hits.map((hits) => hits.map((h) => h.text)),
      [['buy cheap pills'], ['buy cheap pills']],
    )
    const [x, y] = [Math.min(...r.lines[1].map((l) => l.box.x)), Math.min(...r.lines[1].map((l) => l.box.y))]
    assert.equal([r.hits[1][0].box.x, r.hits[1][0].box.y], [x, y])
  } finally {
    await signal.close()
  }
})

test.run()

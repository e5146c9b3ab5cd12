import {test} from 'uvu'
import * as assert from 'uvu/assert'

import type {TextPolicy} from '../../../../src/lib/signals/text/policy-section.js'
import {openTextSignal, textWanted} from '../../../../src/lib/signals/text/signal.js'
import {renderText} from '../../../helpers/render-text.js'

const policy: TextPolicy = {
  video: false,
  rules: [
    {name: 'banned', category: 'hate_symbols', words: ['zorblax']},
    {name: 'contacts', category: 'contact_info', detect: ['email', 'phone', 'url', 'handle']},
  ],
}

test('the signal is wanted only with rules, and for video frames only when the policy asks', () => {
  assert.is(textWanted(undefined, 'image'), false)
  assert.is(textWanted({video: true, rules: []}, 'image'), false)
  assert.is(textWanted(policy, 'image'), true)
  assert.is(textWanted(policy, 'video'), false)
  assert.is(textWanted({...policy, video: true}, 'video'), true)
})

test('flags a meme with a listed word and a photo with an e-mail address, naming rule, text and box', async () => {
  const signal = await openTextSignal(policy, {threads: 1})
  try {
    const meme = await renderText(600, 400, [
      {text: 'WHEN THE Z0RBLAX', x: 40, y: 70, size: 44, font: 'DejaVu Sans', fill: 'black'},
      {text: 'hits different', x: 160, y: 360, size: 36, font: 'DejaVu Sans'},
    ])
    const sign = await renderText(700, 300, [{text: 'contact: rentals@lakeside.org', x: 30, y: 150, size: 30, font: 'Liberation Serif'}], '#cfe3f0')
    const r = await openAndRead(signal, [meme, sign])
    assert.equal(
      r.hits.map((hits) => hits.map((h) => [h.rule, h.category, h.text, h.detector ?? null])),
      [[['banned', 'hate_symbols', 'ZORBLAX', null]], [['contacts', 'contact_info', 'rentals@lakeside.org', 'email']]],
    )
    assert.equal(r.hits[0][0].box, r.lines[0][0].box)
    assert.equal(r.lines[0].map((l) => l.text), ['WHEN THE ZORBLAX', 'hits different'])
  } finally {
    await signal.close()
  }
})

async function openAndRead(signal: Awaited<ReturnType<typeof openTextSignal>>, frames: Parameters<(typeof signal)['read']>[0]) {
  return signal.read(frames)
}

test.run()

import {execFileSync} from 'node:child_process'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {openTextSignal} from '../../../../src/lib/signals/text/signal.js'
import {renderText} from '../../../helpers/render-text.js'
import {testUnless} from '../../../helpers/skip.js'

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

/** Whether fontconfig knows a font drawing full-width Latin letters (DejaVu has none: they come out as boxes). */
function hasFullWidthFont(): boolean {
  try {
    return execFileSync('fc-list', [':charset=ff46', 'family'], {encoding: 'utf8'}).trim() !== ''
  } catch {
    return false
  }
}

const evasionRules = [
  {name: 'freebies', category: 'spam', words: ['freebies']},
  {name: 'pills', category: 'drugs', words: ['pills', 'buy cheap pills', 'viagra']},
  {name: 'replica', category: 'spam', words: ['replica']},
]

/** Draws each spelling, reads it back and checks that it hits the rule named beside it. */
async function assertEvasionsHit(evasions: [string, string][]): Promise<void> {
  const signal = await openTextSignal({video: false, rules: evasionRules}, {threads: 1})
  try {
    const images = await Promise.all(evasions.map(([text]) => renderText(640, 100, [{text, x: 20, y: 65, size: 40}])))
    const r = await signal.read(images)
    const rulesHit = r.hits.map((hits, i) => `${evasions[i][0]}: ${hits.map((h) => h.rule).join(',')} (read ${r.lines[i].map((l) => l.text).join(' / ')})`)
    assert.equal(rulesHit.map((line) => line.replace(/ \(read .*\)$/, '')), evasions.map(([text, rule]) => `${text}: ${rule}`), rulesHit.join('\n'))
  } finally {
    await signal.close()
  }
}

test('spellings made to evade a word list, drawn and read back, still hit it', async () => {
  // What the reader makes of each: `€` is not in its dictionary, so it reads `f`, `t` or nothing in its place.
  await assertEvasionsHit([
    ['free_bies', 'freebies'],
    ['fréébies', 'freebies'],
    ['FRÊËBÏÉS', 'freebies'],
    ['fr€ebies', 'freebies'],
    ['fre€bies', 'freebies'],
    ['freebi€s', 'freebies'],
    ['r€plica', 'replica'],
    ['pi11s', 'pills'],
    ['pill$', 'pills'],
    ['viagr@', 'pills'],
    ['buy cheap p1lls', 'pills'],
    ['buycheappills', 'pills'],
    ['getbuycheappillsnow', 'pills'],
    ['b u y cheap pills', 'pills'],
  ])
})

testUnless(
  hasFullWidthFont() ? undefined : 'no font draws full-width Latin letters (Debian package fonts-wqy-microhei has them)',
  'full-width spellings, drawn and read back, still hit the word list',
  () => assertEvasionsHit([['ｆｒｅｅｂｉｅｓ', 'freebies'], ['ｂｕｙ ｃｈｅａｐ ｐｉｌｌｓ', 'pills']]),
)

test.run()

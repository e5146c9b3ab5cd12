import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {openCodeReader} from '../../../../src/lib/signals/codes/read.js'
import {applyCodesRules, checkCodesSection, compileCodesRules, type CodesSection} from '../../../../src/lib/signals/codes/rules.js'
import {drawCode, printOnPhoto} from './draw.js'

test('codes printed on a photo, read and matched against a section of rules: each hit names its rule, code and box', async () => {
  const {image} = await printOnPhoto('coffee.jpg', 1280, 720, [
    {code: await drawCode('QRCode', 'https://shop.example@pay.evil.com/login', 4), left: 60, top: 60},
    {code: await drawCode('QRCode', 'https://shop.example/menu', 4), left: 700, top: 60, angle: 30},
    {code: await drawCode('QRCode', 'BEGIN:VCARD\nFN:Bob\nTEL:+44 20 7946 0958\nEND:VCARD', 3), left: 60, top: 400},
    {code: await drawCode('EAN13', '4006381333931', 2), left: 700, top: 450},
  ])
  const {problems, section} = checkCodesSection({
    rules: [
      {name: 'scam_links', category: 'contact_info', domains: {deny: ['evil.com']}},
      {name: 'offsite', category: 'spam', formats: ['qr_code'], domains: {allow: ['shop.example']}},
      {name: 'phones', category: 'contact_info', detect: ['phone']},
      {name: 'products', category: 'commerce', any: true, formats: ['ean_13', 'upc_a']},
    ],
  })
  assert.equal(problems, [])
  const reader = await openCodeReader()
  try {
    const codes = reader.read(image)
    assert.equal(codes.map((c) => c.format), ['qr_code', 'qr_code', 'qr_code', 'ean_13'])
    const hits = applyCodesRules(compileCodesRules(section as CodesSection), codes)
    assert.equal(
      hits.map((h) => [h.rule, h.category, h.format, h.matched]),
      [
        ['scam_links', 'contact_info', 'qr_code', 'pay.evil.com'],
        ['offsite', 'spam', 'qr_code', 'pay.evil.com'],
        ['phones', 'contact_info', 'qr_code', '+44 20 7946 0958'],
        ['products', 'commerce', 'ean_13', undefined],
      ],
    )
    // Each hit carries its code's payload and box as read.
    for (const h of hits) assert.ok(codes.some((c) => c.payload === h.payload && c.box === h.box), h.rule)
  } finally {
    await reader.close()
  }
})

test.run()

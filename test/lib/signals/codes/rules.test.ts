import {test} from 'uvu'
import * as assert from 'uvu/assert'

import type {FoundCode} from '../../../../src/lib/signals/codes/read.js'
import {
  applyCodesRules,
  checkCodesSection,
  compileCodesRules,
  type CodesRuleEntry,
  type CodesSection,
} from '../../../../src/lib/signals/codes/rules.js'

const qr = (payload: string, x = 10): FoundCode => ({format: 'qr_code', payload, box: [x, 20, 100, 100]})
const ean: FoundCode = {format: 'ean_13', payload: '4006381333931', box: [300, 400, 190, 100]}

function apply(rules: CodesRuleEntry[], codes: FoundCode[]) {
  const {problems, section} = checkCodesSection({rules})
  assert.equal(problems, [])
  return applyCodesRules(compileCodesRules(section as CodesSection), codes)
}

/** The payloads a single rule hits, in order. */
function hitPayloads(rule: CodesRuleEntry, payloads: string[]): string[] {
  return apply([rule], payloads.map((p) => qr(p))).map((h) => h.payload)
}

test('any: true feeds its category with every code, or with the codes of the formats it names', () => {
  const all = apply([{name: 'codes', category: 'spam', any: true}], [qr('hello'), ean])
  assert.equal(all, [
    {rule: 'codes', category: 'spam', format: 'qr_code', payload: 'hello', box: [10, 20, 100, 100]},
    {rule: 'codes', category: 'spam', format: 'ean_13', payload: '4006381333931', box: [300, 400, 190, 100]},
  ])
  const products = apply([{name: 'products', category: 'commerce', any: true, formats: ['ean_13', 'upc_a']}], [qr('hello'), ean])
  assert.equal(products.map((h) => h.payload), ['4006381333931'])
})

test('a deny list catches its domains and their subdomains, however the address is written', () => {
  const rule: CodesRuleEntry = {name: 'scam', category: 'contact_info', domains: {deny: ['Evil.com', 'bücher.de']}}
  const caught = [
    'https://evil.com/promo',
    'HTTP://WWW.EVIL.COM/A1',
    'https://good.com@evil.com/login',
    'evil.com/x',
    'https://pay.evil.com.:8443/',
    'https://xn--bcher-kva.de',
    'https://BÜCHER.de/shop',
    'MECARD:N:Doe;URL:http://evil.com;;',
    'https://evil\t.com',
    'https://ev\nil.com/x',
  ]
  // A browser opens fine.org for the one with a backslash before the @.
  const passed = ['https://notevil.com', 'https://evil.com.au/x', 'https://fine.org\\@evil.com', 'mailto:sales@evil.com', '4006381333931']
  assert.equal(hitPayloads(rule, [...caught, ...passed]), caught)
  const [hit] = apply([rule], [qr('https://good.com@pay.evil.com/login')])
  assert.is(hit.matched, 'pay.evil.com')
})

test('an allow list catches every address elsewhere, and lets payloads without an address pass', () => {
  const rule: CodesRuleEntry = {name: 'offsite', category: 'spam', domains: {allow: ['shop.example']}}
  const caught = ['https://evil.com', 'https://shop.example@evil.com', 'https://shop.example.evil.com/', 'ftp://files.net/a', 'BEGIN:VCARD\nURL:https://shop.example\nNOTE:see www.evil.com\nEND:VCARD']
  const passed = ['https://shop.example/item/7', 'HTTPS://WWW.SHOP.EXAMPLE.', 'SHOP.EXAMPLE/x', 'hello', '4006381333931', 'tel:+15551234567']
  assert.equal(hitPayloads(rule, [...caught, ...passed]), caught)
  assert.is(apply([rule], [qr(caught[1])])[0].matched, 'evil.com')
})

test('words, regex and detect are the text rules, applied to the payload', () => {
  assert.equal(hitPayloads({name: 'w', category: 'drugs', words: ['cheap pills']}, ['BUY CHEAP PILLS NOW', 'ch3ap p1lls', 'cheapest pillsbury']), [
    'BUY CHEAP PILLS NOW',
    'ch3ap p1lls',
  ])
  assert.equal(hitPayloads({name: 'r', category: 'spam', regex: ['promo-\\d{3}']}, ['PROMO-123', 'promo-12']), ['PROMO-123'])
  const detect = apply([{name: 'd', category: 'contact_info', detect: ['email', 'phone', 'url', 'handle']}], [
    qr('write to sales@evil.com'),
    qr('call +44 20 7946 0958'),
    qr('https://evil.com/x'),
    qr('t.me/evilshop'),
    qr('4006381333931'),
  ])
  assert.equal(
    detect.map((h) => [h.detector, h.matched]),
    [
      ['email', 'sales@evil.com'],
      ['phone', '+44 20 7946 0958'],
      ['url', 'https://evil.com/x'],
      ['handle', 't.me/evilshop'],
    ],
  )
})

test('a payload cannot hide a listed word with characters that draw nothing', () => {
  const [hit] = apply([{name: 'w', category: 'spam', words: ['freebies']}], [qr('get free\u200Bbi\u00ADes now')])
  assert.is(hit.matched, 'freebies')
})

test('a phone number is looked for line by line in a multi-line payload', () => {
  const rule: CodesRuleEntry = {name: 'd', category: 'contact_info', detect: ['phone']}
  assert.equal(hitPayloads(rule, ['BEGIN:VCARD\nTEL:+44 20 7946 0958\nEND:VCARD', 'ROOM 12345\n67890 LOT']), ['BEGIN:VCARD\nTEL:+44 20 7946 0958\nEND:VCARD'])
})

test('text checks see each line of a payload up to 256 characters, 1024 in all; a whole-payload address is read in full', () => {
  const phone = 'call +44 20 7946 0958'
  const rule: CodesRuleEntry = {name: 'd', category: 'contact_info', detect: ['phone']}
  const seen = [`${'x'.repeat(200)} ${phone}`, `${'x '.repeat(120)}\n${phone}`, `${`${'y'.repeat(250)}\n`.repeat(3)}${phone}`]
  const unseen = [`${'x'.repeat(240)} ${phone}`, `${`${'y'.repeat(256)}\n`.repeat(4)}${phone}`]
  assert.equal(hitPayloads(rule, [...seen, ...unseen]), seen)
  // A user name of 300 characters does not hide the host after it.
  const deny: CodesRuleEntry = {name: 'scam', category: 'contact_info', domains: {deny: ['evil.com']}}
  assert.equal(hitPayloads(deny, [`https://${'a'.repeat(300)}@evil.com/x`]).length, 1)
})

test('hits come rule by rule, codes in the order given, once per rule and code', () => {
  const hits = apply(
    [
      {name: 'links', category: 'spam', detect: ['url']},
      {name: 'any', category: 'codes', any: true},
    ],
    [qr('https://a.com https://b.com', 0), qr('plain', 200)],
  )
  assert.equal(
    hits.map((h) => [h.rule, h.payload, h.matched]),
    [
      ['links', 'https://a.com https://b.com', 'https://a.com'],
      ['any', 'https://a.com https://b.com', undefined],
      ['any', 'plain', undefined],
    ],
  )
})

test('a valid section comes back checked, as written', () => {
  const rules: CodesRuleEntry[] = [
    {name: 'any', category: 'spam', any: true, formats: ['qr_code']},
    {name: 'deny', category: 'contact_info', domains: {deny: ['evil.com']}},
    {name: 'allow', category: 'spam', domains: {allow: ['shop.example']}},
    {name: 'words', category: 'drugs', words: ['pills']},
    {name: 'regex', category: 'spam', regex: ['promo-\\d+']},
    {name: 'detect', category: 'contact_info', detect: ['email']},
  ]
  assert.equal(checkCodesSection({rules}), {problems: [], section: {rules}})
  assert.equal(checkCodesSection({rules: []}), {problems: [], section: {rules: []}})
})

test('each problem names its place and what is wrong; all are reported', () => {
  const {problems, section} = checkCodesSection({
    rules: [
      {name: 'none', category: 'spam'},
      {name: 'two', category: 'spam', any: true, words: ['x']},
      {name: 'off', category: 'spam', any: false},
      {name: 'empty', category: 'contact_info', domains: {deny: []}},
      {name: 'both', category: 'spam', domains: {deny: ['a.com'], allow: ['b.com']}},
      {name: 'neither', category: 'spam', domains: {}},
      {name: 'bad', category: '', domains: {deny: ['evil.com', 'https://evil.com/x', '*.evil.com']}},
      {name: 'fmt', category: 'spam', any: true, formats: ['qr_code', 'qrcode', 'ean13']},
      {name: 'nofmt', category: 'spam', any: true, formats: []},
      {name: 're', category: 'spam', regex: ['(?=x)']},
      {name: 'det', category: 'spam', detect: ['url', 'fax']},
      {name: 'sym', category: 'spam', words: ['€€€']},
    ],
  })
  assert.is(section, undefined)
  const FORMATS = 'qr_code, micro_qr_code, data_matrix, aztec, pdf417, ean_13, ean_8, upc_a, upc_e, code_128, code_39, code_93, itf, codabar'
  assert.equal(
    problems.map((p) => [p.path, p.message]),
    [
      [['rules', 'none'], 'codes.rules.none needs one of any, domains, words, regex, detect'],
      [['rules', 'two'], 'codes.rules.two holds one kind of rule (any and words here): split it into rules'],
      [['rules', 'off', 'any'], 'codes.rules.off.any must be true (every code), or left out'],
      [['rules', 'empty', 'domains', 'deny'], 'codes.rules.empty.domains.deny must list at least one domain'],
      [['rules', 'both', 'domains'], 'codes.rules.both.domains holds either deny or allow: a list of domains'],
      [['rules', 'neither', 'domains'], 'codes.rules.neither.domains holds either deny or allow: a list of domains'],
      [['rules', 'bad', 'category'], 'codes.rules.bad.category must name the category its hits feed'],
      [
        ['rules', 'bad', 'domains', 'deny', 1],
        'codes.rules.bad.domains.deny[1] "https://evil.com/x" is an address: write its domain alone (evil.com), which covers every page on it',
      ],
      [
        ['rules', 'bad', 'domains', 'deny', 2],
        'codes.rules.bad.domains.deny[2] "*.evil.com" starts with a dot or a wildcard: write the domain alone (evil.com), which covers its subdomains',
      ],
      [['rules', 'fmt', 'formats', 1], `codes.rules.fmt.formats[1] "qrcode" is not a format; the formats are ${FORMATS}`],
      [['rules', 'fmt', 'formats', 2], `codes.rules.fmt.formats[2] "ean13" is not a format; the formats are ${FORMATS}`],
      [['rules', 'nofmt', 'formats'], `codes.rules.nofmt.formats must list at least one format among ${FORMATS}`],
      [
        ['rules', 're', 'regex', 0],
        'codes.rules.re.regex[0] "(?=x)" uses lookahead or lookbehind (`(?=`), which RE2 syntax leaves out so that matching takes time linear in the text',
      ],
      [['rules', 'det', 'detect', 1], 'codes.rules.det.detect[1] "fax" is not a detector; the detectors are email, phone, url, handle'],
      [['rules', 'sym', 'words', 0], 'codes.rules.sym.words[0] "€€€" holds no letter or digit, so it could never match a word'],
    ],
  )
})

test.run()

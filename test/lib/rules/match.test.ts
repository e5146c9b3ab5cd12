import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {findContacts, type ContactDetector} from '../../../src/lib/rules/contact.js'
import {entryKeys, nfkc, words} from '../../../src/lib/rules/normalise.js'
import {applyRules, compileRules} from '../../../src/lib/rules/match.js'
import type {RuleLine} from '../../../src/lib/rules/types.js'

const box = {x: 1, y: 2, width: 3, height: 4}
const line = (text: string): RuleLine => ({text, box})
const ALL: ContactDetector[] = ['email', 'phone', 'url', 'handle']
const contacts = (text: string) => findContacts(text, ALL).map((c) => [c.detector, text.slice(c.start, c.end)])

test('folds case, NFKC forms and leetspeak; keeps digits alone as digits', () => {
  assert.equal(
    words(nfkc('ＦＲＥＥ fr33 Fr3e! 2024 ﬁne')).map((w) => w.key),
    ['free', 'free', 'free', '2024', 'fine'],
  )
  assert.equal(entryKeys('Hello World'), ['heiio', 'worid'])
  assert.equal(words('he11o').map((w) => w.key), ['heiio'])
  // Symbols around digits alone are a price; inside a word they stand for letters.
  assert.equal(words('$100 5€ €5 fr€e').map((w) => w.key), ['100', '5', '5', 'free'])
  // Symbols alone are no word, and pieces do not join across them.
  assert.equal(words('€€€ fre € ebies !!  x').map((w) => [w.key, w.joins]), [['fre', false], ['ebies', false], ['x', false]])
})

test('diacritics go, the marks and syllables of other scripts stay', () => {
  assert.equal(words(nfkc('Ḟŕéé İstanbul Zalgo̸̢͓')).map((w) => w.key), ['free', 'istanbui', 'zaigo'])
  assert.equal(words(nfkc('한국 हिंदी がぎ Москва')).map((w) => w.key), ['한국', 'हिंदी', 'がぎ', 'москва'])
})

test('characters that draw nothing hide no word from a list, a pattern or a detector', () => {
  // A code's payload may hold them (the text reader never reads them): each of these shows as `freebies`.
  const hidden = ['free\u200Bbies', 'fr\uFEFFeebies', 'free\u00ADbies', 'free\u2060bies', 'free\u{E0041}bies', 'free\u200Ebies']
  const rules = compileRules([{name: 'spam', category: 'spam', words: ['freebies'], patterns: ['\\bfreebies\\b']}])
  for (const text of [...hidden, [...'freebies'].join('\u200D')]) {
    assert.equal(applyRules(rules, [line(`get ${text} now`)]).map((h) => h.text), ['freebies', 'freebies'], JSON.stringify(text))
  }
  const email = compileRules([{name: 'contacts', category: 'contact_info', detect: ['email']}])
  assert.equal(applyRules(email, [line('mail sales@evil\u200B.com')]).map((h) => h.text), ['sales@evil.com'])
})

test('joins letters spelled out with spaces or punctuation', () => {
  assert.equal(words('get f r e e stuff').map((w) => w.key), ['get', 'free', 'stuff'])
  assert.equal(words('f.r.e.e').map((w) => w.key), ['free'])
  assert.equal(words('f-r-3-3 now').map((w) => w.key), ['free', 'now'])
})

test('word lists match whole words and phrases, naming the text as read', () => {
  const rules = compileRules([{name: 'spam', category: 'spam', words: ['free', 'cheap pills']}])
  assert.equal(applyRules(rules, [line('Get FR33 stuff'), line('freedom'), line('buy Cheap  P1lls today'), line('f.r.e.e')]), [
    {rule: 'spam', category: 'spam', text: 'FR33', box},
    {rule: 'spam', category: 'spam', text: 'Cheap  P1lls', box},
    {rule: 'spam', category: 'spam', text: 'f.r.e.e', box},
  ])
})

test('the longest entry starting at a word wins, and its words are not matched again', () => {
  const rules = compileRules([{name: 'spam', category: 'spam', words: ['cheap', 'cheap pills', 'pills']}])
  assert.equal(
    applyRules(rules, [line('cheap pills and pills')]).map((h) => h.text),
    ['cheap pills', 'pills'],
  )
})

/** The texts a rule listing `listed` finds in `lines` (one line each, stacked as one block of text). */
function found(listed: string[], ...lines: string[]): string[] {
  const rules = compileRules([{name: 'list', category: 'spam', words: listed}])
  return applyRules(rules, lines.map((text, i) => ({text, confidence: 1, box: {x: 10, y: 10 + 40 * i, width: 200, height: 36}}))).map((h) => h.text)
}

// One test per row of the table in docs/policy.md ("What a word list catches").
test('caught: case, full-width and styled letters, leetspeak', () => {
  assert.equal(found(['freebies'], 'FREEBIES ＦＲＥＥＢＩＥＳ fr33b1es'), ['FREEBIES', 'FREEBIES', 'fr33b1es'])
})

test('caught: letters spelt out one by one', () => {
  assert.equal(found(['freebies'], 'f r e e b i e s, f.r.e.e.b.i.e.s'), ['f r e e b i e s', 'f.r.e.e.b.i.e.s'])
})

test('caught: a listed word split by single spaces, hyphens, underscores or dots', () => {
  assert.equal(found(['freebies'], 'fre ebies, fr ee bi es, free-bies, free_bies, free.bies, f reebies'), [
    'fre ebies',
    'fr ee bi es',
    'free-bies',
    'free_bies',
    'free.bies',
    'f reebies',
  ])
})

test('caught: diacritics, look-alike symbols and Cyrillic or Greek letters in a Latin word', () => {
  assert.equal(found(['freebies'], 'fréébies FRÊËBÏÉS fr€ebies frееbies frεεbies'), ['fréébies', 'FRÊËBÏÉS', 'fr€ebies', 'frееbies', 'frεεbies'])
  assert.equal(found(['strasse'], 'Straße'), ['Straße'])
  assert.equal(found(['cool'], 'cøøł'), ['cøøł'])
})

test('caught: a listed phrase written as one word, or over the lines of one block in reading order', () => {
  assert.equal(found(['cheap pills'], 'cheappills and cheap_pills'), ['cheappills', 'cheap_pills'])
  assert.equal(found(['buy cheap pills'], 'buy', 'cheap', 'pills'), ['buy cheap pills'])
  assert.equal(found(['buy cheap pills'], 'today: buy cheap', 'pills here'), ['buy cheap pills'])
})

test('not caught: a listed word inside a longer one, or a listed word of under 6 letters assembled from pieces', () => {
  assert.equal(found(['free'], 'freedom carefree freebie'), [])
  assert.equal(found(['free'], 'fr ee'), [])
  assert.equal(found(['penis'], 'the pen is mightier'), [])
  assert.equal(found(['free'], 'free dom'), ['free'])
})

test('caught: symbols ending a word read as letters when that makes a listed word; an exclamation mark stays punctuation', () => {
  assert.equal(found(['pills', 'viagra'], 'pill$ viagr@ pill$! fr33!'), ['pill$', 'viagr@', 'pill$'])
  assert.equal(found(['cheap pills'], 'cheap pill$, cheap_pill$'), ['cheap pill$', 'cheap_pill$'])
  assert.equal(found(['free'], 'fr33! free$'), ['fr33', 'free'])
})

test('caught: a `€` the reader took for an `f` or a `t`, or dropped from a listed form of 7 characters or more', () => {
  assert.equal(found(['freebies'], 'frfebies fretbies freebifs frebies'), ['frfebies', 'fretbies', 'freebifs', 'frebies'])
  assert.equal(found(['free', 'replica'], 'frfe rplica r plica'), ['frfe', 'rplica', 'r plica'])
  assert.equal(found(['buy cheap pills'], 'buy chfap pills, buychtappills'), ['buy chfap pills', 'buychtappills'])
})

test('not caught: two misread letters, a dropped `e` under 7 characters, other letters misread', () => {
  assert.equal(found(['freebies'], 'frffbies frebifs freebiss'), [])
  assert.equal(found(['cheap', 'free'], 'chap fre'), [])
})

test('caught: a listed form of 10 characters or more inside a longer word; shorter ones not', () => {
  assert.equal(found(['buy cheap pills'], 'getbuycheappillsnow BUYCHEAPPILLS4U'), ['getbuycheappillsnow', 'BUYCHEAPPILLS4U'])
  assert.equal(found(['prescription'], 'noprescriptionneeded'), ['noprescriptionneeded'])
  assert.equal(found(['subscribe', 'free pills'], 'unsubscribe freepillsnow'), [])
})

test('caught: a listed word hyphenated at the end of a line', () => {
  assert.equal(found(['freebies'], 'get your free-', 'bies now'), ['free-bies'])
  assert.equal(found(['cheap pills'], 'cheap-', 'pills'), ['cheap-pills'])
})

test('not caught: pieces split by two spaces or other symbols, or over two lines without a hyphen', () => {
  assert.equal(found(['freebies'], 'fre  ebies fre/ebies fr*ebies fre, ebies'), [])
  assert.equal(found(['freebies'], 'fre', 'ebies'), [])
})

test('not caught: a word written wholly in Cyrillic or Greek look-alikes, and lines of separate blocks', () => {
  assert.equal(found(['scam'], 'ѕсам ѕсаm'), ['ѕсаm'])
  const rules = compileRules([{name: 'list', category: 'spam', words: ['buy cheap pills']}])
  const title = {text: 'buy', confidence: 1, box: {x: 10, y: 10, width: 60, height: 36}}
  const caption = {text: 'cheap pills', confidence: 1, box: {x: 10, y: 300, width: 200, height: 36}}
  assert.equal(applyRules(rules, [title, caption]), [])
})

test('a phrase over several lines names their parts and the box around them', () => {
  const rules = compileRules([{name: 'list', category: 'spam', words: ['buy cheap pills']}])
  const lines = [
    {text: 'pills!', confidence: 1, box: {x: 12, y: 100, width: 80, height: 40}},
    {text: 'buy', confidence: 1, box: {x: 10, y: 10, width: 60, height: 40}},
    {text: 'cheap', confidence: 1, box: {x: 8, y: 55, width: 100, height: 40}},
  ]
  assert.equal(applyRules(rules, lines), [{rule: 'list', category: 'spam', text: 'buy cheap pills', box: {x: 8, y: 10, width: 100, height: 130}}])
})

test('a list file of 200 000 entries compiles and matches', () => {
  const listed = Array.from({length: 200_000}, (_, i) => `word${i.toString(36)}x`)
  assert.equal(found(listed, 'a word5x and wo rd5x'), ['word5x', 'wo rd5x'])
})

test('regular expressions run case-insensitively on the NFKC text', () => {
  const rules = compileRules([{name: 'btc', category: 'scam', patterns: ['\\bbc1[a-z0-9]{8,}\\b']}])
  assert.equal(applyRules(rules, [line('send to BC1QXY2KGDYGJRSQTZQ2N0YRF now')]), [{rule: 'btc', category: 'scam', text: 'BC1QXY2KGDYGJRSQTZQ2N0YRF', box}])
})

test('finds e-mail addresses, also written with (at) and (dot)', () => {
  assert.equal(contacts('mail sales@example.com.'), [['email', 'sales@example.com']])
  assert.equal(contacts('write to jo.doe (at) mail (dot) org'), [['email', 'jo.doe (at) mail (dot) org']])
})

test('finds international and national phone numbers, not dates, prices or short numbers', () => {
  assert.equal(contacts('Call+44 2079460958'), [['phone', '+44 2079460958']])
  assert.equal(contacts('ring 0044 20 7946 0958 now'), [['phone', '0044 20 7946 0958']])
  assert.equal(contacts('(555) 123-4567 ext'), [['phone', '(555) 123-4567']])
  assert.equal(contacts('+1 555 010 9999'), [['phone', '+1 555 010 9999']])
  assert.equal(contacts('Call +44 20 7946 0958 today'), [['phone', '+44 20 7946 0958']])
  assert.equal(contacts('opened 2024-01-15, 15.01.2024, price 1 299.00, room 1234567'), [])
  // A camera's date stamp.
  assert.equal(contacts('06.24.2008 17:59'), [])
  assert.equal(contacts('tel 06.24.20.08.17'), [['phone', '06.24.20.08.17']])
})

test("a book's number is no phone number: after ISBN, or 13 digits from 978/979 with a valid check digit", () => {
  assert.equal(contacts('ISBN 3-16-148410-0'), [])
  assert.equal(contacts('ISBN-13: 978-3-16-148410-0'), [])
  assert.equal(contacts('978-3-16-148410-0'), [])
  assert.equal(contacts('9 780306 406157'), [])
  // The same shape with a wrong check digit, and a number that merely starts like one, stay phone numbers.
  assert.equal(contacts('978-3-16-148410-1'), [['phone', '978-3-16-148410-1']])
  assert.equal(contacts('call 978 555 0100'), [['phone', '978 555 0100']])
})

test("a receipt's other numbers are no phone numbers: after an identifier's label, glued to letters, or 000…", () => {
  for (const text of [
    '(GST Reg No. 001492992000)',
    'Slip No.: 0020070154',
    'GST ID: 000220499968',
    'Tax Invoice# 1/A-42210-140220',
    '#002348863',
    'POS: 04 CSH: 00023122',
    'TAX REG ID CBP000709361664',
    'GST 1D:00038 1399040',
  ]) {
    assert.equal(contacts(text), [], text)
  }
  // A phone word nearer than the label, or a +, keeps the number; so does a label word inside another word.
  assert.equal(contacts('Tel No. 0044 20 7946 0958'), [['phone', '0044 20 7946 0958']])
  assert.equal(contacts('WhatsApp #: 0044 7911 123456'), [['phone', '0044 7911 123456']])
  assert.equal(contacts('Order No. +44 7911 123456'), [['phone', '+44 7911 123456']])
  assert.equal(contacts('Nokia 0044 20 7946 0958'), [['phone', '0044 20 7946 0958']])
  assert.equal(contacts('Tel: 03-7956 1234'), [['phone', '03-7956 1234']])
  assert.equal(contacts('Tel0044 20 7946 0958'), [['phone', '0044 20 7946 0958']])
  assert.equal(contacts('Call centre no: 1800-88-1231'), [['phone', '1800-88-1231']])
  assert.equal(contacts('Customer Care No.: 03-7956 1234'), [['phone', '03-7956 1234']])
})

test('an @ before digits and dots alone is a price, not a handle', () => {
  assert.equal(contacts('Discount @10.00% and 2 @3.50'), [])
  assert.equal(contacts('follow @shop24'), [['handle', '@shop24']])
})

test('finds URLs and bare domains under common top-level domains, not abbreviations', () => {
  assert.equal(contacts('see https://example.org/a?b=1, www.shop.de and cheap-pills.com/buy'), [
    ['url', 'https://example.org/a?b=1'],
    ['url', 'www.shop.de'],
    ['url', 'cheap-pills.com/buy'],
  ])
  assert.equal(contacts('St.John Rd. e.g. i.e. No.5 v1.2.3'), [])
  // Defanged dots, in brackets; a bare `dot com` is prose.
  assert.equal(contacts('visit evil[.]com, evil(.)net or evil [dot] org/x'), [
    ['url', 'evil[.]com'],
    ['url', 'evil(.)net'],
    ['url', 'evil [dot] org/x'],
  ])
  assert.equal(contacts('the dot com bubble'), [])
})

test('finds messenger links and @names; an e-mail address is not a handle, a t.me link not a URL', () => {
  assert.equal(contacts('DM @cheap_deals or t.me/deals_bot, wa.me/15550109999, discord.gg/abc123'), [
    ['handle', '@cheap_deals'],
    ['handle', 't.me/deals_bot'],
    ['handle', 'wa.me/15550109999'],
    ['handle', 'discord.gg/abc123'],
  ])
  assert.equal(contacts('me@ab.io @no'), [['email', 'me@ab.io']])
})

test('a detect rule names the detector of each hit', () => {
  const rules = compileRules([{name: 'contacts', category: 'contact_info', detect: ['email', 'phone']}])
  assert.equal(applyRules(rules, [line('sales@example.com or +1 555 010 9999, www.example.com')]), [
    {rule: 'contacts', category: 'contact_info', text: 'sales@example.com', box, detector: 'email'},
    {rule: 'contacts', category: 'contact_info', text: '+1 555 010 9999', box, detector: 'phone'},
  ])
})

test.run()

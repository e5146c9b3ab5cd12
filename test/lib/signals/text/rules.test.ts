import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {findContacts, type ContactDetector} from '../../../../src/lib/signals/text/contact.js'
import {entryKeys, nfkc, words} from '../../../../src/lib/signals/text/normalise.js'
import {applyRules, compileRules} from '../../../../src/lib/signals/text/rules.js'
import type {TextLine} from '../../../../src/lib/signals/text/read.js'

const box = {x: 1, y: 2, width: 3, height: 4}
const line = (text: string): TextLine => ({text, confidence: 0.9, box})
const ALL: ContactDetector[] = ['email', 'phone', 'url', 'handle']
const contacts = (text: string) => findContacts(text, ALL).map((c) => [c.detector, text.slice(c.start, c.end)])

test('folds case, NFKC forms and leetspeak; keeps digits alone as digits', () => {
  assert.equal(
    words(nfkc('ＦＲＥＥ fr33 Fr3e! 2024 ﬁne')).map((w) => w.key),
    ['free', 'free', 'free', '2024', 'fine'],
  )
  assert.equal(entryKeys('Hello World'), ['heiio', 'worid'])
  assert.equal(words('he11o').map((w) => w.key), ['heiio'])
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

test('finds URLs and bare domains under common top-level domains, not abbreviations', () => {
  assert.equal(contacts('see https://example.org/a?b=1, www.shop.de and cheap-pills.com/buy'), [
    ['url', 'https://example.org/a?b=1'],
    ['url', 'www.shop.de'],
    ['url', 'cheap-pills.com/buy'],
  ])
  assert.equal(contacts('St.John Rd. e.g. i.e. No.5 v1.2.3'), [])
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

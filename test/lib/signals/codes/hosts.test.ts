import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {domainProblem, hostMatches, listedDomain, payloadHosts} from '../../../../src/lib/signals/codes/hosts.js'

test('a payload holding one address points to the host a browser would open', () => {
  const cases: [string, string[]][] = [
    ['https://evil.com/x', ['evil.com']],
    ['HTTPS://EVIL.COM/A1', ['evil.com']],
    ['https://evil.com./x', ['evil.com']],
    ['https://evil.com:8443/x', ['evil.com']],
    ['https://good.com@evil.com/x', ['evil.com']],
    ['https://good.com:443@evil.com', ['evil.com']],
    ['https://evil.com\\@good.com', ['evil.com']],
    ['http://%65vil.com', ['evil.com']],
    ['https://ＥＶＩＬ.com', ['evil.com']],
    ['https://bücher.de/x', ['xn--bcher-kva.de']],
    ['https:evil.com', ['evil.com']],
    ['http://0x7f000001/', ['127.0.0.1']],
    ['http://[2001:db8::1]/', ['[2001:db8::1]']],
    ['evil.com/x', ['evil.com']],
    ['EVIL.COM:8080', ['evil.com']],
    ['evil.example', ['evil.example']],
    ['good.com@evil.com/x', ['evil.com', 'good.com']],
    ['192.168.0.1/admin', ['192.168.0.1']],
  ]
  for (const [payload, hosts] of cases) assert.equal(payloadHosts(payload), hosts, payload)
})

test('a payload that is one address points to the host WHATWG URL (as Node and browsers parse) gives', () => {
  // Tabs and newlines anywhere, C0 controls and spaces at the ends, backslashes, percent-escapes, IPv4 number
  // forms, full-width and ideographic dots, soft hyphens and zero-width spaces, empty and missing slashes.
  const payloads = [
    'https://evil\t.com',
    'https://ev\nil.com',
    'https://ev\r\nil.com/x',
    'https://e\tv\ti\tl.c\no\rm/x',
    'h\nttps://evil.com',
    'https:/\t/evil.com',
    'https://evil.com\t',
    ' https://evil.com',
    '\u0001https://evil.com\u001f ',
    'https:\\\\evil.com',
    'https:/\\evil.com',
    'HTTPS://EVIL.COM.',
    'https://evil.com%2e',
    'https://evil%2ecom',
    'https://%45vil.com',
    'http://0x7f.1',
    'http://127.1',
    'http://0177.0.0.1',
    'http://2130706433',
    'https://evil。com',
    'https://ＥＶＩＬ．ｃｏｍ',
    'https://ev\u00adil.com',
    'https://evil.c\u200bom',
    'https:////evil.com',
    'https:/evil.com',
    'HtTpS:evil.com',
    'https://user:pa\nss@evil.com',
    'https://good.com\\@evil.com',
    'https://%F0%9F%98%80.evil.com',
    'wss://evil.com:443/socket',
  ]
  for (const payload of payloads) {
    const expected = new URL(payload).hostname.replace(/\.$/, '')
    assert.ok(payloadHosts(payload).includes(expected), `${JSON.stringify(payload)}: ${JSON.stringify(payloadHosts(payload))} lacks ${expected}`)
  }
  // Written without a scheme, as a phone opens it: the same cleaning.
  assert.ok(payloadHosts('evil\t.com').includes('evil.com'))
  assert.ok(payloadHosts('ev\nil.com/x').includes('evil.com'))
})

test('lines of a vCard are not joined into a host that is not there', () => {
  assert.equal(payloadHosts('BEGIN:VCARD\nURL:https://good.com\nURL:https://good.org/b\nEND:VCARD'), ['good.com', 'good.org'])
})

test('other schemes with an authority name their host: ftp, intent, market', () => {
  assert.equal(payloadHosts('ftp://files.evil.com/a'), ['files.evil.com'])
  assert.equal(payloadHosts('intent://evil.com/#Intent;scheme=https;end'), ['evil.com'])
  assert.equal(payloadHosts('market://details?id=com.example'), ['details'])
})

test('addresses inside a vCard, a MECARD or a sentence count, a MECARD separator ending one', () => {
  assert.equal(payloadHosts('BEGIN:VCARD\nVERSION:3.0\nURL:https://evil.com/a\nEND:VCARD'), ['evil.com'])
  assert.equal(payloadHosts('MECARD:N:Doe,John;URL:http://evil.com;;'), ['evil.com'])
  assert.equal(payloadHosts('Scan for 50% off at www.evil.com today, or shop.evil.net'), ['www.evil.com', 'shop.evil.net'])
  // A `;` inside the user name still leads to the host after the @.
  assert.equal(payloadHosts('https://good.com;@evil.com'), ['evil.com', 'good.com'])
})

test("an address carried in another's query or fragment counts, percent-escapes decoded, redirects inside redirects too", () => {
  assert.equal(payloadHosts('https://www.google.com/url?q=https://evil.com/'), ['www.google.com', 'evil.com'])
  assert.equal(payloadHosts('https://www.google.com/url?q=https%3A%2F%2Fevil.com%2Fx&sa=D'), ['www.google.com', 'evil.com'])
  assert.equal(
    payloadHosts('https://l.facebook.com/l.php?u=https%3A%2F%2Fwww.google.com%2Furl%3Fq%3Dhttps%253A%252F%252Fevil.com'),
    ['l.facebook.com', 'www.google.com', 'evil.com'],
  )
  assert.equal(payloadHosts('https://good.com/?next=evil.com/login'), ['good.com', 'evil.com'])
  assert.equal(payloadHosts('https://good.com/#https://evil.com'), ['good.com', 'evil.com'])
  // Words that merely mention a domain, and a fragment a browser keeps on the page it opens, lead nowhere else.
  assert.equal(payloadHosts('https://www.google.com/search?q=is+evil.com+safe'), ['www.google.com'])
  assert.equal(payloadHosts('https://good.com#@evil.com'), ['good.com'])
})

test('payloads without an address point nowhere: numbers, e-mail, phone, Wi-Fi, script', () => {
  for (const payload of ['4006381333931', '1.5', 'v1.2.3', 'PARCEL-42', 'mailto:sales@evil.com', 'tel:+15551234567', 'WIFI:S:home;T:WPA;P:secret;;', 'javascript:alert(1)', 'hello world']) {
    assert.equal(payloadHosts(payload), [], payload)
  }
})

test('a domain covers itself and its subdomains, nothing else', () => {
  assert.ok(hostMatches('evil.com', 'evil.com'))
  assert.ok(hostMatches('a.b.evil.com', 'evil.com'))
  assert.ok(hostMatches('evil.zip', 'zip'))
  assert.not.ok(hostMatches('notevil.com', 'evil.com'))
  assert.not.ok(hostMatches('evil.com.au', 'evil.com'))
})

test('listed domains are compared in lower case, as punycode, without trailing dots', () => {
  assert.is(listedDomain('EVIL.COM.'), 'evil.com')
  assert.is(listedDomain(' bücher.de '), 'xn--bcher-kva.de')
  assert.is(listedDomain('zip'), 'zip')
  assert.is(listedDomain('127.0.0.1'), '127.0.0.1')
  assert.is(listedDomain('-x.com'), undefined)
})

test('an entry that is no domain says what to write instead', () => {
  assert.is(domainProblem('evil.com'), undefined)
  assert.is(domainProblem('https://evil.com'), 'is an address: write its domain alone (evil.com), which covers every page on it')
  assert.is(domainProblem('evil.com/promo'), 'is an address: write its domain alone (evil.com), which covers every page on it')
  assert.is(domainProblem('*.evil.com'), 'starts with a dot or a wildcard: write the domain alone (evil.com), which covers its subdomains')
  assert.is(domainProblem('.evil.com'), 'starts with a dot or a wildcard: write the domain alone (evil.com), which covers its subdomains')
  assert.is(domainProblem('sales@evil.com'), 'holds an @: write a domain (evil.com), not an e-mail address')
  assert.is(domainProblem('evil.com:80'), 'holds a port: write the domain alone, which covers every port')
  assert.is(domainProblem('ev il.com'), 'is not a domain name (letters, digits and hyphens in dotted labels, or an IDN such as bücher.de)')
  assert.is(domainProblem(''), 'is not a domain name (letters, digits and hyphens in dotted labels, or an IDN such as bücher.de)')
})

test.run()

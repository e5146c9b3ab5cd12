import {test} from 'uvu'
import * as assert from 'uvu/assert'
import ipaddr from 'ipaddr.js'
import {blockReason, isPublicAddress, parseHost} from '../../../src/lib/fetch/address.js'
import {ModError} from '../../../src/lib/errors.js'

function hostAddress(hostname: string): string {
  const host = parseHost(hostname)
  if (host.kind !== 'ip') throw new Error(`${hostname} parsed as a name`)
  return host.address.toString()
}

test('parses decimal, octal, hex and short IPv4 forms as addresses, not names', () => {
  assert.is(hostAddress('0x7f.1'), '127.0.0.1')
  assert.is(hostAddress('2130706433'), '127.0.0.1')
  assert.is(hostAddress('0177.0.0.1'), '127.0.0.1')
  assert.is(hostAddress('127.1'), '127.0.0.1')
  assert.is(hostAddress('0x7f000001'), '127.0.0.1')
  assert.is(hostAddress('127.0.0.1.'), '127.0.0.1')
})

test('parses bracketed and bare IPv6 literals', () => {
  assert.is(hostAddress('[::1]'), '::1')
  assert.is(hostAddress('[::ffff:7f00:1]'), '::ffff:7f00:1')
  assert.is(hostAddress('fe80::1'), 'fe80::1')
})

test('treats anything else as a name to resolve', () => {
  assert.equal(parseHost('images.test'), {kind: 'name', name: 'images.test'})
  assert.equal(parseHost('1e100.net'), {kind: 'name', name: '1e100.net'})
})

test('rejects a bracketed host that is not IPv6', () => {
  try {
    parseHost('[images.test]')
    assert.unreachable('should throw')
  } catch (e) {
    assert.instance(e, ModError)
    assert.is((e as ModError).code, 'bad_request')
  }
})

test('accepts public unicast addresses, including IPv4-mapped and NAT64 forms of them', () => {
  for (const a of ['93.184.216.34', '8.8.8.8', '2606:4700::1111', '::ffff:93.184.216.34', '64:ff9b::5db8:d822']) {
    assert.is(blockReason(ipaddr.parse(a)), undefined, a)
    assert.ok(isPublicAddress(ipaddr.parse(a)), a)
  }
})

test('refuses every non-public IPv4 range with a reason', () => {
  const cases: Array<[string, string]> = [
    ['10.1.2.3', 'a private address'],
    ['172.16.0.1', 'a private address'],
    ['192.168.1.1', 'a private address'],
    ['127.0.0.1', 'a loopback address'],
    ['127.255.255.254', 'a loopback address'],
    ['169.254.169.254', 'a link-local address'],
    ['100.64.0.1', 'a carrier-grade NAT (shared) address'],
    ['0.0.0.0', 'the unspecified address'],
    ['0.1.2.3', 'the unspecified address'],
    ['192.0.0.1', 'a reserved address'],
    ['198.18.0.1', 'a reserved address'],
    ['203.0.113.10', 'a reserved address'],
    ['240.0.0.1', 'a reserved address'],
    ['255.255.255.255', 'the broadcast address'],
    ['224.0.0.1', 'a multicast address'],
  ]
  for (const [a, reason] of cases) {
    assert.is(blockReason(ipaddr.parse(a)), reason, a)
    assert.not.ok(isPublicAddress(ipaddr.parse(a)), a)
  }
})

test('refuses every non-public IPv6 range and IPv6 forms of private IPv4', () => {
  const cases: Array<[string, string]> = [
    ['::', 'the unspecified address'],
    ['::1', 'a loopback address'],
    ['fe80::1', 'a link-local address'],
    ['fc00::1', 'a unique-local address'],
    ['fd12:3456::1', 'a unique-local address'],
    ['fec0::1', 'a site-local address'],
    ['ff02::1', 'a multicast address'],
    ['::ffff:7f00:1', 'a loopback address (127.0.0.1) in IPv4-mapped form'],
    ['::ffff:169.254.169.254', 'a link-local address (169.254.169.254) in IPv4-mapped form'],
    ['64:ff9b::7f00:1', 'a loopback address (127.0.0.1) in NAT64 form'],
    ['64:ff9b::a00:1', 'a private address (10.0.0.1) in NAT64 form'],
    ['64:ff9b:1::5db8:d822', 'a local-use NAT64 address'],
    ['::7f00:1', 'an IPv4-compatible address'],
    ['::5db8:d822', 'an IPv4-compatible address'],
    ['::ffff:0:7f00:1', 'an IPv4-translated address'],
    ['2002:7f00:1::1', 'a 6to4 address'],
    ['2002:5db8:d822::1', 'a 6to4 address'],
    ['2001:0:5db8:d822::1', 'a Teredo address'],
    ['2001:db8::1', 'a reserved address'],
    ['4000::1', 'an address outside the global unicast range'],
  ]
  for (const [a, reason] of cases) {
    assert.is(blockReason(ipaddr.parse(a)), reason, a)
    assert.not.ok(isPublicAddress(ipaddr.parse(a)), a)
  }
})

test.run()

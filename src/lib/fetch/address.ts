import ipaddr from 'ipaddr.js'
import {ModError} from '../errors.js'

export type IpAddress = ipaddr.IPv4 | ipaddr.IPv6

/** A URL host: an IP literal (to check as is) or a name (to resolve, then check each answer). */
export type Host = {kind: 'ip'; address: IpAddress} | {kind: 'name'; name: string}

/**
 * Classifies a URL hostname. WHATWG `URL` already rewrites decimal, octal, hex and short IPv4 forms
 * (`0x7f.1`, `2130706433`, `0177.0.0.1`, `127.1`) to dotted quads; they are parsed here as well so that a
 * hostname that did not come through `URL` cannot slip past the check as a "name".
 */
export function parseHost(hostname: string): Host {
  if (hostname.startsWith('[') && hostname.endsWith(']')) {
    const inner = hostname.slice(1, -1)
    if (!ipaddr.IPv6.isValid(inner)) throw new ModError('bad_request', 'the URL host is not a valid IPv6 address')
    return {kind: 'ip', address: ipaddr.IPv6.parse(inner)}
  }
  const bare = hostname.endsWith('.') ? hostname.slice(0, -1) : hostname
  if (ipaddr.IPv4.isValid(bare)) return {kind: 'ip', address: ipaddr.IPv4.parse(bare)}
  if (ipaddr.IPv6.isValid(bare)) return {kind: 'ip', address: ipaddr.IPv6.parse(bare)}
  return {kind: 'name', name: hostname}
}

const RANGE_PHRASES: Record<string, string> = {
  unspecified: 'the unspecified address',
  broadcast: 'the broadcast address',
  multicast: 'a multicast address',
  linkLocal: 'a link-local address',
  loopback: 'a loopback address',
  carrierGradeNat: 'a carrier-grade NAT (shared) address',
  private: 'a private address',
  uniqueLocal: 'a unique-local address',
  deprecatedSiteLocal: 'a site-local address',
  reserved: 'a reserved address',
  benchmarking: 'a benchmarking address',
  rfc6145: 'an IPv4-translated address',
  rfc6052: 'a local-use NAT64 address',
  '6to4': 'a 6to4 address',
  teredo: 'a Teredo address',
}

const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR('2000::/3')
const NAT64_WELL_KNOWN = ipaddr.IPv6.parseCIDR('64:ff9b::/96')

/** The IPv4 address carried by an IPv4-mapped (`::ffff:a.b.c.d`) or well-known NAT64 (`64:ff9b::a.b.c.d`) address. */
function embeddedIPv4(addr: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  if (addr.range() !== 'ipv4Mapped' && !addr.match(NAT64_WELL_KNOWN)) return undefined
  const [hi, lo] = addr.parts.slice(6)
  return new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff])
}

/**
 * Why an address must not be fetched from, as a phrase for a message ("a loopback address"), or
 * undefined when it is public. Default deny: IPv4 must be in ipaddr.js's `unicast` range (so private,
 * loopback, link-local, CGNAT, 0/8, 192.0.0/24, 198.18/15, documentation, 240/4, broadcast, multicast
 * are all refused); IPv6 must be `unicast` inside 2000::/3 (which also refuses IPv4-compatible
 * `::a.b.c.d`). IPv4-mapped and well-known NAT64 addresses are judged by the IPv4 address they carry,
 * so DNS64 networks keep working while `[::ffff:127.0.0.1]` and `[64:ff9b::7f00:1]` are refused;
 * 6to4 and Teredo are refused outright (obsolete, and their embedded address is not worth trusting).
 */
export function blockReason(addr: IpAddress): string | undefined {
  if (addr.kind() === 'ipv4') {
    const range = addr.range()
    return range === 'unicast' ? undefined : (RANGE_PHRASES[range] ?? `a special-purpose address (${range})`)
  }
  const v6 = addr as ipaddr.IPv6
  const inner = embeddedIPv4(v6)
  if (inner) {
    const reason = blockReason(inner)
    const form = v6.range() === 'ipv4Mapped' ? 'IPv4-mapped' : 'NAT64'
    return reason && `${reason} (${inner.toString()}) in ${form} form`
  }
  const range = v6.range()
  if (range === 'unicast') {
    if (v6.match(GLOBAL_UNICAST_V6)) return undefined
    return v6.parts.slice(0, 6).every((p) => p === 0)
      ? 'an IPv4-compatible address'
      : 'an address outside the global unicast range'
  }
  return RANGE_PHRASES[range] ?? `a special-purpose address (${range})`
}

/** True when the address may be fetched from (see blockReason). */
export function isPublicAddress(addr: IpAddress): boolean {
  return blockReason(addr) === undefined
}

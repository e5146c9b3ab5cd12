import type {IncomingMessage} from 'node:http'

import ipaddr from 'ipaddr.js'

/** Who sends a request, at the two levels the upload places count (see Gate.receive). */
export interface Client {
  /**
   * What MOD_MAX_UPLOADS_PER_CLIENT counts: an IPv4 address (also when written IPv4-mapped, `::ffff:192.0.2.1`), or the
   * /64 network of an IPv6 address, since one host usually holds a whole /64.
   */
  key: string
  /**
   * The network a slow body's client is judged by when places run out: an IPv6 /56, what a home or small site is
   * usually given (so its 256 /64s count as one), or the IPv4 address itself (IPv4 addresses are scarce, and the
   * neighbours of one in a /24 are often other people's).
   */
  network: string
}

/** The client of `req`, by the address it connects from: behind a reverse proxy every request comes from the proxy's. */
export function clientOf(req: IncomingMessage): Client {
  const address = req.socket.remoteAddress ?? ''
  return {key: clientKey(address), network: networkKey(address)}
}

export function clientKey(address: string): string {
  return ipv6Prefix(address, 64) ?? ipv4Of(address)
}

export function networkKey(address: string): string {
  return ipv6Prefix(address, 56) ?? ipv4Of(address)
}

/** An IPv4-mapped address unwrapped; any other as it is. */
function ipv4Of(address: string): string {
  if (!ipaddr.IPv6.isValid(address)) return address
  const ip = ipaddr.IPv6.parse(address)
  return ip.isIPv4MappedAddress() ? ip.toIPv4Address().toString() : address
}

/** The /`bits` network of an IPv6 address (`bits` at most 64), or undefined for an IPv4 one, mapped or not. */
function ipv6Prefix(address: string, bits: number): string | undefined {
  if (!ipaddr.IPv6.isValid(address)) return undefined
  const ip = ipaddr.IPv6.parse(address)
  if (ip.isIPv4MappedAddress()) return undefined
  const groups = ip.parts.slice(0, Math.ceil(bits / 16)).map((g, i) => (bits - 16 * i >= 16 ? g : g & (0xffff << (16 - (bits - 16 * i)))))
  return `${groups.map((g) => g.toString(16)).join(':')}::/${bits}`
}

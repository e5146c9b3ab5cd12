import type {IncomingMessage} from 'node:http'

import ipaddr from 'ipaddr.js'

/**
 * The client a request's upload place is counted against (MOD_MAX_UPLOADS_PER_CLIENT): its IPv4 address (also when
 * written IPv4-mapped, `::ffff:192.0.2.1`), or the /64 network of its IPv6 address, since one host usually holds a
 * whole /64. Behind a reverse proxy every request comes from the proxy's address.
 */
export function clientOf(req: IncomingMessage): string {
  return clientKey(req.socket.remoteAddress ?? '')
}

export function clientKey(address: string): string {
  if (!ipaddr.IPv6.isValid(address)) return address
  const ip = ipaddr.IPv6.parse(address)
  if (ip.isIPv4MappedAddress()) return ip.toIPv4Address().toString()
  return `${ip.parts
    .slice(0, 4)
    .map((g) => g.toString(16))
    .join(':')}::/64`
}

import type {IncomingMessage} from 'node:http'
import {isIPv6} from 'node:net'

/**
 * The client a request's upload place is counted against (MOD_MAX_UPLOADS_PER_CLIENT): its IPv4 address (also when
 * written IPv4-mapped, `::ffff:192.0.2.1`), or the /64 network of its IPv6 address, since one host usually holds a
 * whole /64. Behind a reverse proxy every request comes from the proxy's address.
 */
export function clientOf(req: IncomingMessage): string {
  return clientKey(req.socket.remoteAddress ?? '')
}

export function clientKey(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  if (mapped) return mapped[1]
  if (!isIPv6(address)) return address
  const [head, tail] = address.split('%')[0].split('::')
  const left = head === '' ? [] : head.split(':')
  const right = tail === undefined || tail === '' ? [] : tail.split(':')
  const groups = tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill('0'), ...right]
  return `${groups
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(':')}::/64`
}

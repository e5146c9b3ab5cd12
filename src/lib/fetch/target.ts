import {lookup} from 'node:dns/promises'
import ipaddr from 'ipaddr.js'
import {ModError} from '../errors.js'
import {blockReason, parseHost} from './address.js'

/** Answers every address of a host name (like `dns.lookup` with `all: true`). */
export type Resolver = (hostname: string) => Promise<string[]>

export const systemResolver: Resolver = async (hostname) =>
  (await lookup(hostname, {all: true, verbatim: true})).map((a) => a.address)

/**
 * Ports a browser refuses to fetch from (https://fetch.spec.whatwg.org/#bad-port): mail, shell, IRC and
 * similar services that an HTTP request could be smuggled into. Every other port is allowed, since
 * the address check already keeps requests on public hosts.
 */
const BAD_PORTS = new Set([
  0, 1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104,
  109, 110, 111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515,
  526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049,
  3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
])

/** A URL as it may appear in a message: scheme, host and port only (no credentials, path or query). */
export function describeUrl(url: URL): string {
  return url.host ? `${url.protocol}//${url.host}` : url.protocol
}

/** Which URL a message is about: the one the caller gave, one a server redirected to, or a job's callback_url. */
export type Subject = 'the URL' | 'the redirect target' | 'the callback URL'

/**
 * Refuses what is wrong with the URL itself: a scheme other than http/https, credentials (they would
 * not be forwarded, and a secret in a URL given to a moderation API is a leak waiting to happen), or a
 * bad port.
 */
export function checkUrl(url: URL, subject: Subject): void {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ModError('url_blocked', `${subject} uses ${url.protocol}; only http and https URLs are fetched`)
  }
  if (url.username !== '' || url.password !== '') {
    throw new ModError('url_blocked', `${subject} contains a user name or password, which is not allowed`)
  }
  if (url.port !== '' && BAD_PORTS.has(Number(url.port))) {
    throw new ModError('url_blocked', `${subject} uses port ${url.port}, which is not fetched from`)
  }
}

/**
 * localhost and its subdomains are loopback by definition (RFC 6761), whatever a resolver says of them, also written
 * as a fully qualified name with a trailing dot, which some resolvers do not answer: refused by name.
 */
export const namesLoopback = (name: string): boolean => /(^|\.)localhost\.?$/i.test(name)

function blocked(message: string): ModError {
  return new ModError('url_blocked', `${message}; only public addresses are fetched`)
}

/**
 * The addresses to connect to for an http(s) URL, every one of them checked. A name is resolved once
 * here, and the caller must connect only to the returned addresses (so a second, different DNS answer
 * can never be used). When any answer is not public the whole host is refused: picking the public
 * answers of a name that also points inside would still let its owner aim at internal services.
 */
export async function checkedAddresses(url: URL, subject: Subject, resolve: Resolver): Promise<string[]> {
  const host = parseHost(url.hostname)
  if (host.kind === 'ip') {
    const reason = blockReason(host.address)
    if (reason) throw blocked(`${subject} ${describeUrl(url)} is ${reason}`)
    return [host.address.toString()]
  }
  if (namesLoopback(host.name)) throw blocked(`${subject} ${describeUrl(url)} names the loopback host`)
  let answers: string[]
  try {
    answers = await resolve(host.name)
  } catch {
    throw new ModError('url_fetch_failed', `could not resolve ${host.name}`)
  }
  if (answers.length === 0) throw new ModError('url_fetch_failed', `could not resolve ${host.name}`)
  return answers.map((answer) => {
    if (!ipaddr.isValid(answer)) throw blocked(`${host.name} resolves to ${answer}, which is not an IP address`)
    const address = ipaddr.parse(answer)
    const reason = blockReason(address)
    if (reason) throw blocked(`${subject} host ${host.name} resolves to ${answer}, ${reason}`)
    return address.toString()
  })
}

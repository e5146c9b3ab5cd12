/**
 * The hosts a code's payload points to, and the domains of the policy's allow and deny lists, compared the way a
 * browser reads an address: hosts are parsed by the WHATWG URL parser (Node's `URL`, as browsers parse), so
 * upper case, full-width letters, IDN (compared as punycode), percent-escapes, user names before `@`
 * (`https://good.com@evil.com` goes to evil.com), backslashes, ports and trailing dots all come out as the host
 * the browser would open.
 *
 * The URLs of a payload are
 * - the whole payload, when it is one address with or without a scheme (`evil.com/x`, `EVIL.COM:8080`): a phone
 *   opens a code holding a bare address as a web page. It is first cleaned as the URL parser cleans its input:
 *   C0 controls and spaces trimmed from both ends, and every tab, line feed and carriage return removed wherever
 *   it stands, so `https://evil<TAB>.com` and `https://ev<LF>il.com` are evil.com, as a browser opens them.
 *   Without a scheme, its host must end in a label of letters (or punycode), or be four dotted numbers, so that a
 *   product number (`4006381333931`) or a decimal (`1.5`) is no address;
 * - every `scheme://` address in it, whatever the scheme (`ftp://`, `intent://`, `market://`): each names a host;
 *   these, and the next, are read line by line as a linkifier reads text, without the cleaning above, which would
 *   join a vCard's lines into hosts that are not there;
 * - what the text rules' URL detector finds in it (www. addresses, bare domains under common top-level domains),
 *   so that an address inside a vCard, a MECARD or a sentence counts too (at the start of its lines: payload.ts);
 * - an address carried in another's query or fragment, percent-escapes decoded (a redirect link,
 *   `https://www.google.com/url?q=https%3A%2F%2Fevil.com`, leads to evil.com), to a depth of NESTED_DEPTH.
 * Addresses without a host (`mailto:`, `tel:`, `sms:`, `javascript:`, `WIFI:`) point to no domain: the text
 * rules' detectors (`detect: [email, phone]`) are there for those.
 */
import {domainToASCII} from 'node:url'

import {findContacts} from '../../rules/contact.js'
import {checkedLines} from './payload.js'

/** Schemes whose addresses the URL parser reads as browsers do (the WHATWG "special" schemes). */
const SPECIAL = /^(?:https?|wss?|ftp|file):/i
const SCHEME = /^[a-z][a-z0-9+.-]*:/i
/**
 * A `scheme://` address inside a text, up to a space, a quote or a `;` (which separates a MECARD's fields). The
 * scheme starts where no scheme character stands before it and is short: a long run of letters costs one try.
 */
const ADDRESS = /(?<![a-z0-9+.-])[a-z][a-z0-9+.-]{0,31}:(?:\/\/|\\\\)[^\s<>"'`;]+/giu
/** A host written without a scheme: dotted, ending in letters or punycode, or four dotted numbers; then a port, a path or nothing. */
const BARE = /^(?:[^\s/?#@:]+@)?(?:[^\s/?#@:.]+\.)+(?:[\p{L}]{2,63}|xn--[a-z0-9-]+)\.?(?::\d+)?(?:[/?#]\S*)?$|^(?:\d+\.){3}\d+(?::\d+)?(?:[/?#]\S*)?$/iu
const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/
/** What the URL parser removes from anywhere in its input. */
const TAB_OR_NEWLINE = /[\t\n\r]/g

/** What the URL parser trims from both ends of its input (C0 controls and space), and JavaScript's white space. */
function isEdge(c: string): boolean {
  return c <= ' ' || /\s/.test(c)
}

/** The payload as the URL parser would read it whole: ends trimmed, tabs and newlines removed. */
function asOneAddress(payload: string): string {
  // Loops, not /[...]+$/, which would retry every run of spaces inside a long payload.
  let start = 0
  let end = payload.length
  while (start < end && isEdge(payload[start])) start++
  while (end > start && isEdge(payload[end - 1])) end--
  return payload.slice(start, end).replace(TAB_OR_NEWLINE, '')
}

function withoutTrailingDots(host: string): string {
  // A loop, not /\.+$/, which would retry every run of dots inside a long host.
  let end = host.length
  while (end > 0 && host[end - 1] === '.') end--
  return host.slice(0, end)
}

/** The host of one address as written, or undefined when it has none or does not parse. */
function hostOf(address: string): string | undefined {
  let url: URL
  try {
    if (SPECIAL.test(address)) url = new URL(address)
    else if (SCHEME.test(address) && !BARE.test(address)) {
      // Another scheme: its authority, if it has one, read as a web address's.
      const authority = /^[^:]+:(?:\/\/|\\\\)([^/?#\\]*)/.exec(address)?.[1]
      if (!authority) return undefined
      url = new URL(`http://${authority}`)
    } else url = new URL(`http://${address}`)
  } catch {
    return undefined
  }
  // A host no name server could answer (`evil.com;n`, read past a MECARD's separator) is no destination.
  const host = withoutTrailingDots(url.hostname)
  return host.startsWith('[') || listedDomain(host) === host ? host : undefined
}

/** Whether `text`, read whole, is one address: a bare host or a `scheme:` address with something after it. */
function isOneAddress(text: string): boolean {
  return !/\s/.test(text) && (BARE.test(text) || (SCHEME.test(text) && /^[^:]+:[/\\]*[^/\\\s]/.test(text)))
}

/** Redirects inside redirects are followed this deep (each level's parameters are read once). */
const NESTED_DEPTH = 3

/** The addresses carried in a web address's query parameters and fragment, decoded. */
function carried(address: string): string[] {
  if (!SPECIAL.test(address)) return []
  let url: URL
  try {
    url = new URL(address)
  } catch {
    return []
  }
  const values = [...url.searchParams.values()]
  const fragment = url.hash.slice(1)
  if (fragment !== '') values.push(...new URLSearchParams(fragment).values(), safeDecode(fragment))
  const found: string[] = []
  for (const value of values) {
    const one = asOneAddress(value)
    if (isOneAddress(one)) found.push(one)
    else for (const m of value.matchAll(ADDRESS)) found.push(m[0])
  }
  return found
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

/**
 * The hosts the payload's URLs point to (lower case, punycode, no trailing dot), each once, in order. The text URL
 * detector sees the payload's checked lines (payload.ts); the rest is linear in the payload's length, times the
 * depth of carried addresses.
 */
export function payloadHosts(payload: string): string[] {
  const text = payload.trim()
  const whole = asOneAddress(payload)
  let addresses: string[] = []
  if (isOneAddress(whole)) addresses.push(whole)
  for (const m of text.matchAll(ADDRESS)) addresses.push(m[0])
  for (const line of checkedLines(text)) for (const c of findContacts(line, ['url'])) addresses.push(line.slice(c.start, c.end))
  const all = [...addresses]
  for (let depth = 0; depth < NESTED_DEPTH && addresses.length > 0; depth++) {
    addresses = addresses.flatMap(carried)
    all.push(...addresses)
  }
  const hosts = all.map(hostOf).filter((h): h is string => h !== undefined)
  return [...new Set(hosts)]
}

/** Whether `host` is `domain` or one of its subdomains. */
export function hostMatches(host: string, domain: string): boolean {
  return host === domain || host.endsWith(`.${domain}`)
}

/** A listed domain as hosts are compared (lower case, punycode, no trailing dot); undefined when it is none. */
export function listedDomain(entry: string): string | undefined {
  const ascii = domainToASCII(withoutTrailingDots(entry.trim()))
  return ascii !== '' && ascii.split('.').every((label) => LABEL.test(label)) ? ascii : undefined
}

/**
 * Why an entry of an allow or deny list is no domain, as the end of a sentence that starts with the entry's
 * place; undefined when it is one.
 */
export function domainProblem(entry: string): string | undefined {
  const written = entry.trim()
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(written) || written.includes('/')) return 'is an address: write its domain alone (evil.com), which covers every page on it'
  if (/^\*?\./.test(written)) return 'starts with a dot or a wildcard: write the domain alone (evil.com), which covers its subdomains'
  if (written.includes('@')) return 'holds an @: write a domain (evil.com), not an e-mail address'
  if (/:\d*$/.test(written)) return 'holds a port: write the domain alone, which covers every port'
  return listedDomain(written) === undefined ? 'is not a domain name (letters, digits and hyphens in dotted labels, or an IDN such as bücher.de)' : undefined
}

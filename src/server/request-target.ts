/** An absolute-form request target: the scheme and authority, then the path and query (if any). */
const ABSOLUTE_FORM = /^https?:\/\/[^/?#]*/i

/**
 * The request target in origin form (`/path?query`), which routing, the key check and the logs read. A request may
 * name its target in absolute form (`GET http://host:8000/health HTTP/1.1`, as a client that takes the server for a
 * proxy sends it), and a server must accept that (RFC 9112 §3.2.2): its path and query are the target. The rest is
 * kept as sent, byte for byte (no URL parsing that would resolve dot segments or re-encode), and an authority with
 * no path means `/`.
 */
export function originForm(url: string): string {
  const authority = ABSOLUTE_FORM.exec(url)
  if (!authority) return url
  const rest = url.slice(authority[0].length)
  return rest.startsWith('/') ? rest : `/${rest}`
}

import {createHash} from 'node:crypto'
import type {IncomingMessage, ServerResponse} from 'node:http'

/** A short name of `body`'s content (16 hex digits of its sha256): the same bytes, the same name, in any process. */
export function contentVersion(body: Buffer): string {
  return createHash('sha256').update(body).digest('hex').slice(0, 16)
}

/** An entity tag naming `body`'s content. */
export function entityTagOf(body: Buffer): string {
  return `"${contentVersion(body)}"`
}

/** Whether If-None-Match names the entity tag (or is `*`), compared weakly as RFC 9110 says for GET. */
export function notModified(req: IncomingMessage, etag: string): boolean {
  const header = req.headers['if-none-match']
  if (header === undefined) return false
  return header.split(',').some((tag) => {
    const t = tag.trim()
    return t === '*' || t.replace(/^W\//, '') === etag
  })
}

/**
 * A 304 for a client whose copy is current (If-None-Match names `etag`), with its tag and caching and no body; true
 * when it was sent. Otherwise nothing is set: a 200 carries the tag itself, and an error none.
 */
export function answeredNotModified(req: IncomingMessage, res: ServerResponse, etag: string, cacheControl: string): boolean {
  if (!notModified(req, etag)) return false
  res.statusCode = 304
  res.setHeader('Cache-Control', cacheControl)
  res.setHeader('ETag', etag)
  res.end()
  return true
}

import type {IncomingMessage} from 'node:http'

import {emptyFileError, ModError} from '../lib/errors.js'
import {readCapped} from '../lib/input/read-capped.js'
import {formatSize} from '../lib/sizes.js'
import {bodyStream, bodyTooLarge, type BodyLimits} from './body-stream.js'

/** The most bytes a JSON body may have, and what that room is for, as a refusal says it. */
export interface BodyLimit {
  maxBytes: number
  room: string
}

/**
 * The largest JSON body worth reading for images of `maxBytes`: their base64 text, plus 10% for line
 * breaks and escaped slashes that some encoders add, plus room for a data-URI prefix and the keys.
 */
export function jsonBodyLimit(maxBytes: number): BodyLimit {
  return {
    maxBytes: Math.ceil(Math.ceil(maxBytes / 3) * 4 * 1.1) + 64 * 1024,
    room: `the most a JSON body needs for an image of at most ${formatSize(maxBytes)} (MOD_MAX_BYTES) in base64`,
  }
}

export function isJson(req: IncomingMessage): boolean {
  const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase()
  return type === 'application/json' || /^application\/[\w.+-]+\+json$/.test(type)
}

/**
 * The request body, counted as it arrives: a declared Content-Length over `limit` is refused before
 * reading, and past `limit` bytes reading stops with payload_too_large; a body that sends nothing for
 * `idleMs` is request_timeout. Its bytes are counted in `hold` before they are buffered.
 */
export async function readBody(req: IncomingMessage, limits: BodyLimits): Promise<Buffer> {
  return readCapped(bodyStream(req, limits), limits.maxBytes, 'the request body', () => bodyTooLarge(limits))
}

const DATA_URI = /^data:[^,]*?;base64,/i
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/
const WHITESPACE = /[\t\n\r ]/g

/**
 * The characters decodeBase64 accepts, as a JSON Schema pattern (which has no flags: the data URI's letters are matched
 * in either case). The length rule is checked in decodeBase64 and stated in the field's description: a pattern for it
 * (groups of four among whitespace) overflows the regular expression engine's stack on a body of a few MiB.
 */
export const BASE64_PATTERN = '^(?:[Dd][Aa][Tt][Aa]:[^,]*;[Bb][Aa][Ss][Ee]64,)?[\\t\\n\\r A-Za-z0-9+/]*(?:=[\\t\\n\\r ]*){0,2}$'

/** What image_base64 must be, for a person. */
export const BASE64_EXPECTED = 'base64 text (the standard alphabet, = only at the end; line breaks allowed) or a data: URI with ;base64,'

const invalidBase64 = (why: string): ModError => new ModError('bad_request', `image_base64 is not valid: ${why}`)

/**
 * Base64 of the standard alphabet (base64url's - and _ are refused), whitespace allowed anywhere (the line breaks of
 * wrapped output), a data URI's prefix dropped. Padding is optional (RFC 4648 leaves it out where the length is known,
 * as here), but the length must be one base64 has: a last group of one character holds no whole byte, and padding
 * given must complete the last group of four. Node's decoder takes anything, decoding what it can, so a character
 * lost or added in transit would be scored as some other image, or as an empty file.
 */
export function decodeBase64(text: string): Buffer {
  const bare = text.replace(DATA_URI, '').replace(WHITESPACE, '')
  if (!BASE64.test(bare)) throw invalidBase64(`expected ${BASE64_EXPECTED}`)
  const data = bare.replace(/=+$/, '')
  if (data.length % 4 === 1) {
    throw invalidBase64(`${data.length} base64 characters cannot be whole bytes (base64 comes in groups of 4; a last group of 1 has a character too many or too few)`)
  }
  if (data.length < bare.length && bare.length % 4 !== 0) throw invalidBase64('its = padding does not complete the last group of 4 characters')
  return Buffer.from(data, 'base64')
}

/** The image of `image_base64`: decoded, not empty (as an empty upload), and at most `maxBytes` (else payload_too_large). */
export function base64Image(text: string, maxBytes: number): Buffer {
  const data = decodeBase64(text)
  if (data.length === 0) throw emptyFileError()
  if (data.length > maxBytes) {
    throw new ModError('payload_too_large', `the image is larger than ${formatSize(maxBytes)} (MOD_MAX_BYTES)`)
  }
  return data
}

import {ModError} from '../../../lib/errors.js'
import {isJobId} from '../storage.js'
import {MAX_ITEM_ID, MAX_ITEM_URL} from './schema.js'
import type {Chunk, ImageItem} from './types.js'

/** Longest file name an uploaded item carries. */
const MAX_NAME = 1024

const isText = (v: unknown, max: number): v is string => typeof v === 'string' && v.length <= max
const isCount = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= 0

function isHttpUrl(value: unknown): boolean {
  if (!isText(value, MAX_ITEM_URL)) return false
  try {
    return ['http:', 'https:'].includes(new URL(value).protocol)
  } catch {
    return false
  }
}

function isItem(raw: unknown): raw is ImageItem {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return false
  const {url, file, id, ...rest} = raw as Record<string, unknown>
  if (Object.keys(rest).length > 0 || (id !== undefined && !isText(id, MAX_ITEM_ID))) return false
  return url !== undefined ? file === undefined && isHttpUrl(url) : isText(file, MAX_NAME)
}

/**
 * A chunk as read back from Redis, checked field by field (anyone who can write to that Redis can write one): a
 * URL is http(s) and is fetched under the URL rules anyway; an uploaded item is only ever read from the folder its
 * job id and index name.
 */
export function readChunk(raw: unknown): Chunk {
  const refused = (why: string) => new ModError('internal', `a chunk in the queue was refused: ${why}`)
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw refused('its data is not an object')
  const {job, index, start, items, ...rest} = raw as Record<string, unknown>
  if (Object.keys(rest).length > 0) throw refused(`it has an unknown field ${JSON.stringify(Object.keys(rest)[0])}`)
  if (!isJobId(job)) throw refused('its job id is not one this server gives')
  if (!isCount(index) || !isCount(start)) throw refused('its index or start is not a whole number')
  if (!Array.isArray(items) || items.length === 0 || !items.every(isItem)) throw refused('its items are not valid')
  return {job, index, start, items}
}

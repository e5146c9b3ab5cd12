import type {ItemResult} from '../../../lib/engine.js'
import type {JobError} from '../types.js'
import type {Chunk, ImageItem} from './types.js'

/** The name a result carries for an item: its URL, or its uploaded file name. */
export const sourceOf = (item: ImageItem): string => ('url' in item ? item.url : item.file)

/** One result line: the item's index and id first, then its result or error entry. */
export function resultLine(index: number, item: ImageItem, entry: ItemResult | {source: string; error: JobError}): string {
  return JSON.stringify({index, ...(item.id === undefined ? {} : {id: item.id}), ...entry})
}

/** The lines of a chunk that could not be run at all: each item carries the chunk's error. */
export function failedLines(chunk: Chunk, error: JobError): string[] {
  return chunk.items.map((item, i) => resultLine(chunk.start + i, item, {source: sourceOf(item), error}))
}

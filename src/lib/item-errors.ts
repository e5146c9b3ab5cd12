import {isModError, type ModError} from './errors.js'
import {ITEM_ERROR_CODES} from './schemas.js'
import type {ErrorEntry, ItemErrorCode} from './types.js'

const ITEM_ERRORS: ReadonlySet<string> = new Set(ITEM_ERROR_CODES)

/** Errors that belong to one input (unreadable, unsupported, too large): a run over many reports them and goes on. */
export function isItemError(e: unknown): e is ModError & {code: ItemErrorCode} {
  return isModError(e) && ITEM_ERRORS.has(e.code)
}

/** The entry that stands in a batch, a folder scan or a dataset run for an input that failed with an item error. */
export function itemErrorEntry(source: string, e: ModError & {code: ItemErrorCode}): ErrorEntry {
  return {source, error: {code: e.code, message: e.message}}
}

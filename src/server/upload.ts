import type {IncomingMessage} from 'node:http'
import {createWriteStream} from 'node:fs'
import {join} from 'node:path'
import {Writable} from 'node:stream'

import formidable, {errors} from 'formidable'

import {isModError, ModError} from '../lib/errors.js'
import {byteCap, type ByteCap} from '../lib/input/read-capped.js'
import {formatSize} from '../lib/sizes.js'
import type {Pace} from './body-pace.js'
import {bodyStream, type BodyStream} from './body-stream.js'
import {checkFraming, MULTIPART_PLUGINS} from './multipart-framing.js'
import {plural} from '../lib/plural.js'
import type {Hold, Place} from './upload-places.js'

/** An uploaded image, held in memory (images are at most MOD_MAX_BYTES). */
export interface UploadedImage {
  /** The client's file name, or the field name when it sent none. */
  filename: string
  data: Buffer
  /** In a batch, why the file was not kept (over MOD_MAX_BYTES): an error entry in its place. */
  refused?: ModError
}

/** An uploaded video, written to disk; the caller owns `path` and removes it. */
export interface UploadedVideo {
  filename: string
  path: string
  size: number
}

/** The pace (MOD_BODY_TIMEOUT_MS, MOD_BODY_MIN_RATE) is enforced as the body arrives. */
export interface ImageUploadLimits extends Pace {
  field: string
  /** Files allowed in `field`; more is too_many_files (or bad_request when 1: a single-file endpoint). */
  maxFiles: number
  /** Per file, enforced as the bytes arrive. */
  maxBytes: number
  /** All files together (MOD_MAX_BATCH_BYTES), enforced as the bytes arrive; default maxFiles x maxBytes. */
  maxTotalBytes?: number
  /** Where the body's bytes are counted as held in memory before they are buffered. */
  hold?: Hold
  /** The request's upload place (see bodyStream). */
  place?: Place
}

export interface VideoUploadLimits extends Pace {
  field: string
  maxBytes: number
  /** A folder owned by this request; the video is written there as `upload`. */
  dir: string
  /** The request's upload place (see bodyStream). */
  place?: Place
}

/** Form fields that are not files are ignored, but they cannot be used to make the server buffer much. */
const FIELD_LIMITS = {maxFields: 32, maxFieldsSize: 64 * 1024}

/** A multipart body may carry this much besides its files: the form fields, part headers and boundaries. */
const FORM_ROOM = FIELD_LIMITS.maxFieldsSize + 64 * 1024

/** What a multipart body's limit is: room for `files` (the setting that bounds them named) and the form around them. */
const inForm = (files: string): string => `the most ${files} can take in a multipart form`

/**
 * The longest file name a client may give a part: a result's `source` is that name, echoed in every answer, log
 * line and stored job line. A longer one is a bad request.
 */
export const MAX_FILE_NAME = 1024

/** The client's name for a file part (the field's name when it gives none), and the error for one too long to keep. */
function clientName(file: {originalFilename: string | null}, field: string): {name: string; error?: ModError} {
  const name = file.originalFilename || field
  if (name.length <= MAX_FILE_NAME) return {name}
  return {name: `${name.slice(0, 32)}…`, error: new ModError('bad_request', `a file name is ${name.length} characters long; at most ${MAX_FILE_NAME} are taken`)}
}

export function isMultipart(req: IncomingMessage): boolean {
  return /^multipart\/form-data\s*(;|$)/i.test(req.headers['content-type'] ?? '')
}

/**
 * Reads a multipart body of images into memory, in upload order. Limits hold while the body streams:
 * a file over `maxBytes`, or files over `maxTotalBytes` together, is payload_too_large as soon as the byte
 * over the limit arrives (a declared Content-Length over them plus the form's room, before reading), and file
 * number `maxFiles + 1` is too_many_files as soon as its part begins. Empty files are returned as they
 * are (a single-file endpoint refuses them; a batch reports them as unreadable).
 */
export async function receiveImages(req: IncomingMessage, limits: ImageUploadLimits): Promise<UploadedImage[]> {
  checkFraming(req)
  const maxTotal = Math.min(limits.maxTotalBytes ?? Number.POSITIVE_INFINITY, limits.maxFiles * limits.maxBytes)
  // The total is MOD_MAX_BATCH_BYTES, or MOD_MAX_BATCH x MOD_MAX_BYTES where that is smaller: each message names
  // the settings that make it, since MOD_MAX_BATCH_BYTES alone (/health's max_batch_bytes) may be far larger.
  const byBatchBytes = maxTotal === limits.maxTotalBytes
  const files =
    limits.maxFiles === 1
      ? `an image of at most ${formatSize(limits.maxBytes)} (MOD_MAX_BYTES)`
      : byBatchBytes
        ? `files of at most ${formatSize(maxTotal)} together (MOD_MAX_BATCH_BYTES)`
        : `${limits.maxFiles} files of at most ${formatSize(limits.maxBytes)} each (MOD_MAX_BATCH, MOD_MAX_BYTES)`
  const body = bodyStream(req, {idleMs: limits.idleMs, minRate: limits.minRate, maxBytes: maxTotal + FORM_ROOM, room: inForm(files), hold: limits.hold, place: limits.place})
  const totalLimit = byBatchBytes ? '(MOD_MAX_BATCH_BYTES)' : `(${limits.maxFiles} files of at most ${formatSize(limits.maxBytes)} each: MOD_MAX_BATCH, MOD_MAX_BYTES)`
  const total = byteCap(maxTotal, 'the files', () => new ModError('payload_too_large', `the files are larger than ${formatSize(maxTotal)} together ${totalLimit}`))
  const received: Received[] = []
  const unexpected = new Set<string>()
  const form = formidable({
    ...FIELD_LIMITS,
    enabledPlugins: MULTIPART_PLUGINS,
    maxFiles: limits.maxFiles,
    // memorySink enforces maxBytes per file and the files' total as the bytes arrive (formidable's own
    // per-file check only runs once a file has ended).
    maxFileSize: Infinity,
    maxTotalFileSize: Infinity,
    allowEmptyFiles: true,
    minFileSize: 0,
    filter: (part) => keep(part, limits.field, unexpected),
    // formidable emits fileBegin and then, synchronously, opens the file through this handler.
    // In a batch, a file over maxBytes is dropped as it streams and becomes an error entry; alone, it ends the request.
    fileWriteStreamHandler: () => memorySink(received[received.length - 1], limits.maxBytes, total, limits.maxFiles > 1),
  })
  acceptUntypedFiles(form)
  form.on('fileBegin', (_name, file) => {
    const {name, error} = clientName(file, limits.field)
    received.push({filename: name, chunks: [], ...(error ? {error} : {})})
  })
  const [fields] = await parse(form, body, limits)
  // formidable drops a sink's error that comes after the body's last byte was parsed; it is kept here.
  const failed = received.find((r) => r.error)
  if (failed?.error) throw failed.error
  checkFields(limits.field, unexpected, received.length, fields)
  return received.map((r) => ({filename: r.filename, data: Buffer.concat(r.chunks), ...(r.refused ? {refused: r.refused} : {})}))
}

/**
 * Streams one video upload to `dir/upload`; over `maxBytes` it stops at once with payload_too_large
 * (counted as the bytes arrive) and the partial file is left for the caller to remove with `dir`.
 */
export async function receiveVideo(req: IncomingMessage, limits: VideoUploadLimits): Promise<UploadedVideo> {
  checkFraming(req)
  const unexpected = new Set<string>()
  let filename = limits.field
  const path = join(limits.dir, 'upload')
  const cap = byteCap(limits.maxBytes, 'the video', () => new ModError('payload_too_large', videoTooLarge(limits.maxBytes)))
  let failed: ModError | undefined
  const form = formidable({
    ...FIELD_LIMITS,
    enabledPlugins: MULTIPART_PLUGINS,
    maxFiles: 1,
    // The file sink below counts the bytes against maxBytes as they arrive.
    maxFileSize: Infinity,
    maxTotalFileSize: Infinity,
    allowEmptyFiles: true,
    minFileSize: 0,
    filter: (part) => keep(part, limits.field, unexpected),
    fileWriteStreamHandler: () => cappedFile(path, [cap], (e) => (failed = e)),
  })
  acceptUntypedFiles(form)
  form.on('fileBegin', (_name, file) => {
    const named = clientName(file, limits.field)
    filename = named.name
    if (named.error) failed ??= named.error
  })
  const room = inForm(`a video of at most ${formatSize(limits.maxBytes)} (MOD_MAX_VIDEO_BYTES)`)
  const body = bodyStream(req, {idleMs: limits.idleMs, minRate: limits.minRate, maxBytes: limits.maxBytes + FORM_ROOM, room, place: limits.place})
  const [fields, files] = await parse(form, body, {field: limits.field, maxFiles: 1})
  if (failed) throw failed
  const file = files[limits.field]?.[0]
  checkFields(limits.field, unexpected, file ? 1 : 0, fields)
  return {filename, path, size: cap.total}
}

export interface FilesUploadLimits extends Pace {
  field: string
  /** Files allowed (MOD_MAX_JOB_ITEMS); file number maxFiles + 1 is too_many_files as soon as its part begins. */
  maxFiles: number
  /** Per file (MOD_MAX_BYTES), counted as the bytes arrive. */
  maxBytes: number
  /** All files together (MOD_MAX_JOB_BYTES), counted as the bytes arrive. */
  maxTotalBytes: number
  /** The file of index i is written to `pathOf(i)`, in a folder the caller owns and removes. */
  pathOf: (index: number) => string
  place?: Place
}

/**
 * Streams the files of a multipart body to disk, one after the other, in upload order (the bulk image jobs'
 * uploads): nothing is held in memory, and every limit is enforced as the bytes arrive. Returns the client's file
 * names; the files are at `pathOf(index)`. Empty files are kept (they become error lines, as in a batch).
 */
export async function receiveFiles(req: IncomingMessage, limits: FilesUploadLimits): Promise<string[]> {
  checkFraming(req)
  const unexpected = new Set<string>()
  const names: string[] = []
  const total = byteCap(limits.maxTotalBytes, 'the files', () => new ModError('payload_too_large', `the files are larger than ${formatSize(limits.maxTotalBytes)} together (MOD_MAX_JOB_BYTES)`))
  let failed: ModError | undefined
  const fail = (e: ModError) => (failed ??= e)
  const form = formidable({
    ...FIELD_LIMITS,
    enabledPlugins: MULTIPART_PLUGINS,
    maxFileSize: Infinity,
    maxTotalFileSize: Infinity,
    allowEmptyFiles: true,
    minFileSize: 0,
    filter: (part) => keep(part, limits.field, unexpected),
    fileWriteStreamHandler: () => {
      const index = names.length - 1
      if (index >= limits.maxFiles) {
        const e = new ModError('too_many_files', `a job holds at most ${plural(limits.maxFiles, 'item')} (MOD_MAX_JOB_ITEMS)`)
        fail(e)
        return new Writable({write: (_chunk, _encoding, callback) => callback(e)})
      }
      const name = names[index]
      const file = byteCap(limits.maxBytes, name, () => new ModError('payload_too_large', `${name} is larger than ${formatSize(limits.maxBytes)} (MOD_MAX_BYTES)`))
      return cappedFile(limits.pathOf(index), [file, total], fail)
    },
  })
  acceptUntypedFiles(form)
  form.on('fileBegin', (_name, file) => {
    const {name, error} = clientName(file, limits.field)
    names.push(name)
    if (error) fail(error)
  })
  const room = inForm(`files of at most ${formatSize(limits.maxTotalBytes)} together (MOD_MAX_JOB_BYTES)`)
  const body = bodyStream(req, {idleMs: limits.idleMs, minRate: limits.minRate, maxBytes: limits.maxTotalBytes + FORM_ROOM + limits.maxFiles * 512, room, place: limits.place})
  const [fields] = await parse(form, body, {field: limits.field, maxFiles: limits.maxFiles})
  if (failed) throw failed
  checkFields(limits.field, unexpected, names.length, fields)
  return names
}

/** A file at `path` that fails (and reports to `onError`) once its bytes go over one of `caps`. */
function cappedFile(path: string, caps: ByteCap[], onError: (e: ModError) => void): Writable {
  const out = createWriteStream(path)
  const sink: Writable = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      try {
        for (const cap of caps) cap.add(chunk.length)
      } catch (e) {
        onError(e as ModError)
        callback(e as ModError)
        return
      }
      out.write(chunk, callback)
    },
    final(callback) {
      out.end(callback)
    },
    destroy(e, callback) {
      out.destroy()
      callback(e)
    },
  })
  // A write still pending when the upload is cut fails on the destroyed file: already handled.
  out.on('error', (e) => {
    if (!sink.destroyed) sink.destroy(e)
  })
  return sink
}

/**
 * A part with a filename is a file even without its own Content-Type (RFC 7578 makes it optional; the content
 * is sniffed by the decoder): formidable would read it as a text field. A part with a Content-Type and no filename
 * is a file to formidable already; only a part with neither is a text value.
 */
function acceptUntypedFiles(form: ReturnType<typeof formidable>): void {
  form.onPart = (part) => {
    if (typeof part.originalFilename === 'string' && !part.mimetype) part.mimetype = 'application/octet-stream'
    return form._handlePart(part)
  }
}

/** Files in other fields are skipped unread and reported after the body ends (formidable has no way to stop from a filter). */
function keep(part: formidable.Part, field: string, unexpected: Set<string>): boolean {
  if (part.name === field) return true
  unexpected.add(part.name ?? '')
  return false
}

/** The refusal of a form without its file field; `hint` says how the field came, if it came as a text value. */
export const missingField = (field: string, hint = ''): string => `the multipart field "${field}" is missing: send the file${hint} in "${field}"`

/** The refusal of a video upload past MOD_MAX_VIDEO_BYTES. */
export const videoTooLarge = (maxBytes: number): string => `the video is larger than ${formatSize(maxBytes)} (MOD_MAX_VIDEO_BYTES)`

function checkFields(field: string, unexpected: Set<string>, count: number, fields: formidable.Fields): void {
  if (unexpected.size > 0) {
    const names = [...unexpected].map((n) => JSON.stringify(n)).join(', ')
    throw new ModError('bad_request', `unexpected file field ${names}: send files in the field "${field}"`)
  }
  const text = fields[field] !== undefined
  if (count === 0) {
    const hint = text ? ' as a file (with a filename), not as a text value' : ''
    throw new ModError('bad_request', missingField(field, hint))
  }
  // Among files, a text value would have no result in their upload order: every later result would pair with the
  // upload before it.
  if (text) throw new ModError('bad_request', `the multipart field "${field}" holds a text value among its files: send each one as a file (with a filename)`)
}

interface Received {
  filename: string
  chunks: Buffer[]
  /** Ends the request. */
  error?: ModError
  /** Ends this file only: its bytes are counted against the total and dropped. */
  refused?: ModError
}

/**
 * A Writable that keeps the chunks and fails with payload_too_large past the files' total, or past `limit` bytes;
 * with `dropOver`, a file past `limit` is refused alone instead (its chunks let go, the rest of it counted and dropped).
 */
function memorySink(into: Received, limit: number, total: ByteCap, dropOver: boolean): Writable {
  const file = byteCap(limit, into.filename, () => new ModError('payload_too_large', `${into.filename} is larger than ${formatSize(limit)} (MOD_MAX_BYTES)`))
  return new Writable({
    write(chunk: Buffer, _encoding, callback) {
      const fail = (e: unknown) => {
        into.error = e as ModError
        callback(into.error)
      }
      if (!into.refused) {
        try {
          file.add(chunk.length)
        } catch (e) {
          if (!dropOver) return fail(e)
          into.refused = e as ModError
          into.chunks = []
        }
      }
      try {
        total.add(chunk.length)
      } catch (e) {
        return fail(e)
      }
      if (!into.refused) into.chunks.push(chunk)
      callback()
    },
  })
}

/** What a failed parse is answered with: which field the files go in, and how many are allowed there. */
interface Expected {
  field: string
  maxFiles: number
}

async function parse(form: ReturnType<typeof formidable>, body: BodyStream, expected: Expected): Promise<[formidable.Fields, formidable.Files]> {
  try {
    return await form.parse(body as unknown as IncomingMessage)
  } catch (e) {
    throw uploadError(e, expected)
  }
}

/** formidable's numeric error codes → ModError in our words (its own messages name its options and parser states); our own sink errors pass through. */
function uploadError(e: unknown, {field, maxFiles}: Expected): ModError {
  if (isModError(e)) return e
  const code = (e as {code?: unknown}).code
  switch (code) {
    case errors.maxFilesExceeded:
      return maxFiles === 1
        ? new ModError('bad_request', `this endpoint takes one file: send exactly one in the field "${field}"`)
        : new ModError('too_many_files', `a batch holds at most ${plural(maxFiles, 'file')} (MOD_MAX_BATCH)`)
    case errors.maxFieldsExceeded:
    case errors.maxFieldsSizeExceeded:
      return new ModError(
        'payload_too_large',
        `the form has more than ${FIELD_LIMITS.maxFields} text fields or more than ${formatSize(FIELD_LIMITS.maxFieldsSize)} of them; send only the file`,
      )
    case errors.aborted:
      return new ModError('bad_request', 'the request was cancelled by the client')
    case errors.missingMultipartBoundary:
      return new ModError('bad_request', 'the Content-Type multipart/form-data has no boundary')
    case errors.unknownTransferEncoding:
      return new ModError('bad_request', 'a part of the form has a Content-Transfer-Encoding this server does not read (send the file as binary)')
    case errors.malformedMultipart:
    case errors.filenameNotString:
      return new ModError('bad_request', 'the multipart/form-data body is malformed: a part or the closing boundary is broken or missing')
    default:
      return new ModError('internal', e instanceof Error ? e.message : String(e))
  }
}

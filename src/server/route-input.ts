import {ModError} from '../lib/errors.js'
import {Type} from '../lib/typebox.js'
import {isJson, jsonBodyLimit} from './body.js'
import {paceOf} from './body-pace.js'
import type {Request, RouteContext} from './context.js'
import type {Upload} from './upload-places.js'
import type {AnyRoute, Input} from './route.js'
import {isMultipart} from './upload.js'
import {jsonBodyReader, pathReader, queryReader} from './validate.js'

const noBody = (): Promise<never> => Promise.reject(new ModError('internal', 'this route declares no JSON body'))

/** What a body with a Content-Encoding is told; the header's value is not repeated (it may be 16 KiB long). */
const ENCODED =
  'the request body has a Content-Encoding other than identity, and request bodies are not decoded: send it uncompressed, without Content-Encoding'

const TRANSFER_ENCODED =
  'the request body has a Transfer-Encoding other than chunked, and request bodies are not decoded: send it uncompressed, with chunked alone'

/** Whether every coding of a coding list header is one of `plain`. */
const onlyCodings = (header: string, plain: readonly string[]): boolean => header.split(',').every((coding) => plain.includes(coding.trim().toLowerCase()))

/**
 * A body's Content-Encoding must be identity (or absent): the server never decodes one, so a gzipped body would be
 * read as its compressed bytes (and "not valid JSON"), and a plain body labelled gzip would be taken as it is. The
 * same for a transfer coding before chunked (`gzip, chunked`), which Node's parser reads as chunked alone.
 */
function checkEncoding(req: Request): void {
  const encoding = req.headers['content-encoding']
  if (encoding !== undefined && !onlyCodings(encoding, ['', 'identity'])) throw new ModError('unsupported_media', ENCODED)
  const transfer = req.headers['transfer-encoding']
  if (transfer !== undefined && !onlyCodings(transfer, ['chunked'])) throw new ModError('unsupported_media', TRANSFER_ENCODED)
}

/** Refuses a body of another media type or coding than the route's, before anything is read. */
function mediaCheck(body: AnyRoute['body'], upload: AnyRoute['upload']): (req: Request) => void {
  if (body === undefined) return () => {}
  const checkType = typeCheck(body, upload)
  return (req) => {
    checkEncoding(req)
    checkType(req)
  }
}

function typeCheck(body: NonNullable<AnyRoute['body']>, upload: AnyRoute['upload']): (req: Request) => void {
  if (body.media === 'application/json' && upload) {
    return (req) => {
      if (!isJson(req) && !isMultipart(req)) {
        throw new ModError('unsupported_media', `send the request body as application/json, or as multipart/form-data with the files in the field "${upload.field}"`)
      }
    }
  }
  if (body.media === 'application/json') {
    return (req) => {
      if (!isJson(req)) throw new ModError('unsupported_media', 'send the request body as application/json')
    }
  }
  if (body.media === 'multipart/form-data') {
    const message = `send the request as multipart/form-data with the file in the field "${body.field}"`
    return (req) => {
      if (!isMultipart(req)) throw new ModError('unsupported_media', message)
    }
  }
  return () => {}
}

/** `make()` on first call, the same value after: a route's validators compile when it is first asked. */
function once<T>(make: () => T): () => T {
  let made: {value: T} | undefined
  return () => (made ??= {value: make()}).value
}

/**
 * A handler's input from its route's declaration: the media type, the path parameters and the query are checked
 * (and the query typed) before anything is read; the JSON body, of at most what MOD_MAX_BYTES of base64 needs (or the route's own limit), is
 * read and validated when the handler asks for it. The validators are compiled at the route's first request, not
 * when the server is built: most servers answer a few routes, and compiling every one cost each 0.1 s of CPU.
 */
export function inputOf(route: AnyRoute): (ctx: RouteContext, req: Request) => Input<Record<string, unknown>, unknown> {
  const checkMedia = mediaCheck(route.body, route.upload)
  const {pathParams, query: queryShape, body: declared} = route
  const readParams = once(() => (pathParams ? pathReader(pathParams) : () => ({})))
  // What a request asks of a route that changes something is checked whole: a query parameter it does not take
  // (a `threshold`, a misspelt `fps`) is refused rather than answered as if applied. GET and HEAD stay lenient
  // (cache-busting parameters, probes); HEAD is a GET route's.
  const strict = route.method === 'GET' ? undefined : `${route.method} ${route.path}`
  const readQuery = once(() => queryReader(queryShape ?? Type.Object({}), strict) as (search: URLSearchParams) => Record<string, unknown>)
  const readJson = declared?.media === 'application/json' ? once(() => jsonBodyReader(declared.schema)) : undefined
  return (ctx, req) => {
    checkMedia(req)
    const params = readParams()((req as Request & {params?: Record<string, string>}).params ?? {})
    const query = readQuery()(new URL(req.url ?? '/', 'http://localhost').searchParams)
    const {limits} = ctx.settings
    const limit = declared?.media === 'application/json' && declared.limit ? declared.limit(ctx.settings) : jsonBodyLimit(limits.maxBytes)
    const body = readJson ? (upload?: Upload) => readJson()(req, {...limit, ...paceOf(limits), hold: upload, place: upload}) : noBody
    return {query, params, body, multipart: route.upload !== undefined && isMultipart(req)}
  }
}

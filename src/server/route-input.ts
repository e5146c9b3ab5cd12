import {ModError} from '../lib/errors.js'
import {isJson, jsonBodyLimit} from './body.js'
import {paceOf} from './body-pace.js'
import type {Request, RouteContext} from './context.js'
import type {Upload} from './upload-places.js'
import type {AnyRoute, Input} from './route.js'
import {isMultipart} from './upload.js'
import {jsonBodyReader, pathReader, queryReader} from './validate.js'

const noBody = (): Promise<never> => Promise.reject(new ModError('internal', 'this route declares no JSON body'))

/** Refuses a body of another media type than the route's, before anything is read. */
function mediaCheck(body: AnyRoute['body'], upload: AnyRoute['upload']): (req: Request) => void {
  if (body?.media === 'application/json' && upload) {
    return (req) => {
      if (!isJson(req) && !isMultipart(req)) {
        throw new ModError('unsupported_media', `send the request body as application/json, or as multipart/form-data with the files in the field "${upload.field}"`)
      }
    }
  }
  if (body?.media === 'application/json') {
    return (req) => {
      if (!isJson(req)) throw new ModError('unsupported_media', 'send the request body as application/json')
    }
  }
  if (body?.media === 'multipart/form-data') {
    const message = `send the request as multipart/form-data with the file in the field "${body.field}"`
    return (req) => {
      if (!isMultipart(req)) throw new ModError('unsupported_media', message)
    }
  }
  return () => {}
}

/**
 * A handler's input from its route's declaration: the media type, the path parameters and the query are checked
 * (and the query typed) before anything is read; the JSON body, of at most what MOD_MAX_BYTES of base64 needs, is
 * read and validated when the handler asks for it.
 */
export function inputOf(route: AnyRoute): (ctx: RouteContext, req: Request) => Input<Record<string, unknown>, unknown> {
  const checkMedia = mediaCheck(route.body, route.upload)
  const readParams = route.pathParams ? pathReader(route.pathParams) : () => ({})
  const readQuery = route.query ? queryReader(route.query) : () => ({})
  const readJson = route.body?.media === 'application/json' ? jsonBodyReader(route.body.schema) : undefined
  return (ctx, req) => {
    checkMedia(req)
    const params = readParams((req as Request & {params?: Record<string, string>}).params ?? {})
    const query = readQuery(new URL(req.url ?? '/', 'http://localhost').searchParams)
    const {limits} = ctx.settings
    const body = readJson ? (upload?: Upload) => readJson(req, {maxBytes: jsonBodyLimit(limits.maxBytes), ...paceOf(limits), hold: upload, place: upload}) : noBody
    return {query, params, body, multipart: route.upload !== undefined && isMultipart(req)}
  }
}

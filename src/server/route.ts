import type {ServerResponse} from 'node:http'

import type {Static, TObject, TSchema} from '../lib/typebox.js'

import type {Limits, ServerSettings} from '../lib/config/settings.js'
import type {BodyLimit} from './body.js'
import type {Request, RouteContext} from './context.js'
import type {HttpError, HttpErrorCode} from './errors.js'
import type {Upload} from './upload-places.js'
import type {QueryValues} from './validate.js'

/**
 * A route declares itself next to its handler: what it reads, what it answers, and the error codes it
 * can raise. app.ts registers it and checks from the declaration its body's media type, its path
 * parameters, its query (and its JSON body); the OpenAPI document is generated from the declarations
 * (openapi.ts), the statuses from errors.ts.
 */

/** What the documentation of one server states besides the routes: its switches and limits. */
export interface ServerFacts {
  /** Whether MOD_API_KEY is set. */
  apiKey: boolean
  /** MOD_ALLOW_URLS. */
  allowUrls: boolean
  limits: Limits
}

/** Prose that may state this server's facts. */
export type Text = string | ((facts: ServerFacts) => string)

export type Tag = 'moderation' | 'jobs' | 'policy' | 'service'

export interface JsonBody<B extends TSchema> {
  media: 'application/json'
  schema: B
  description: Text
  /** The example the documentation page starts from; it should succeed on a default server. */
  example: Static<B>
  /**
   * The most bytes the body may have, and what that room is for (said when a body is refused); default: the base64
   * text of an image of MOD_MAX_BYTES (body.ts jsonBodyLimit).
   */
  limit?: (settings: ServerSettings) => BodyLimit
}

/** A multipart body stays streamed by the upload code; the schema only documents it. */
export interface MultipartBody {
  media: 'multipart/form-data'
  /** The form field the files go in, named by the refusal of a body of another media type. */
  field: string
  schema: (limits: Limits) => Record<string, unknown>
  description: Text
}

export interface Success {
  description: string
  schema: TSchema | Record<string, unknown>
  /** Default application/json. */
  media?: string
  example?: unknown
  /** Response headers the answer always carries (e.g. Location of a new job). */
  headers?: Record<string, {description: string; schema: Record<string, unknown>}>
}

/** The success answers a route may declare. */
export type Responses = {200: Success} | {202: Success}

export interface Operation<Q extends TObject = TObject, B extends TSchema = TSchema, R extends Responses = Responses> {
  method: 'GET' | 'POST' | 'DELETE'
  path: string
  operationId: string
  summary: string
  description: Text
  tags: Tag[]
  /** As in OpenAPI: absent, the API key applies (when the server has one); `[]`, the operation is public. */
  security?: []
  /** Parameters in the path (`/v1/jobs/{id}`), validated by app.ts before the handler runs. */
  pathParams?: Record<string, PathParam>
  query?: Q
  body?: JsonBody<B> | MultipartBody
  /** A multipart body accepted instead of the JSON `body`; the handler reads it itself (`Input.multipart`). */
  upload?: MultipartBody
  /** The success answer: 200, or 202 for work accepted to run later; the handler's `Reply` sends only these. */
  responses: R
  /**
   * The codes the handler can raise. Those the declaration implies (a body, a query, path parameters) are added by
   * `errorsOf`, and 401 from `security` by the document; errors.ts gives their statuses.
   */
  errors: HttpErrorCode[]
  /** An error's message in the document's example, where this route's differs from the error table's example. */
  errorExamples?: Partial<Record<HttpErrorCode, Text>>
}

export interface PathParam {
  description: string
  /** A string schema; `title` says what it expects in the refusal of a value that does not match. */
  schema: TSchema
}

/**
 * Every code an operation can answer but 401: the handler's own, and those app.ts raises from the declaration
 * before the handler runs or while it reads the body (inputOf): a query or path value that does not match is
 * bad_request; a body of another media type (or with a Content-Encoding) is unsupported_media, one over its limit
 * payload_too_large, one that stops arriving request_timeout, and one that cannot be parsed (or lacks its field)
 * bad_request.
 */
export function errorsOf(op: Operation): HttpErrorCode[] {
  const implied: HttpErrorCode[] = [
    ...(op.query || op.pathParams ? (['bad_request'] as const) : []),
    ...(op.body ? (['bad_request', 'unsupported_media', 'payload_too_large', 'request_timeout'] as const) : []),
  ]
  return [...new Set([...op.errors, ...implied])]
}

/** What app.ts hands a handler beside the request: the query typed and validated, the JSON body on demand. */
export interface Input<Q, B> {
  query: Q
  /** The path parameters, validated. */
  params: Record<string, string>
  /**
   * Reads and validates the JSON body on the request's upload place, its bytes counted there as they are buffered.
   * A handler calls it once it holds an upload place.
   */
  body: (upload?: Upload) => Promise<B>
  /** Whether the request carries the route's `upload` (multipart) rather than its JSON body. */
  multipart: boolean
}

/** A JSON success answer's body type; an answer declared with another media type (text, NDJSON) has none. */
type BodyOf<X> = X extends {media: string} ? never : X extends {schema: infer S extends TSchema} ? Static<S> : never

/** The headers an answer declares are required (e.g. a new job's Location). */
type HeadersArg<X> = X extends {headers: infer H} ? [headers: {[K in keyof H]: string}] : []

export interface Reply<R> {
  /** The response itself, for answers written as they go (text, NDJSON) rather than as one JSON body. */
  readonly raw: ServerResponse
  /** Sends the declared JSON answer of `status`; a body that breaks its schema throws (a 500 `internal`) instead. */
  send<S extends keyof R & number>(status: S, body: BodyOf<R[S]>, ...headers: HeadersArg<R[S]>): void
  /** Sends an error answer that is not a thrown error (e.g. /ready's refusal). */
  error(e: HttpError): void
}

export type RouteHandler<Q, B, R> = (ctx: RouteContext, req: Request, reply: Reply<R>, input: Input<Q, B>) => Promise<void>

export interface Route<Q extends TObject = TObject, B extends TSchema = TSchema, R extends Responses = Responses> extends Operation<Q, B, R> {
  handler: RouteHandler<QueryValues<Q>, Static<B>, R>
}

/** A route with its types erased, as the list of routes holds it. */
export type AnyRoute = Route<TObject, TSchema, Responses>

/** Declares a route; the handler's query, body and answer types follow from the schemas. */
export function declareRoute<Q extends TObject = TObject, B extends TSchema = TSchema, R extends Responses = Responses>(route: Route<Q, B, R>): AnyRoute {
  return route as unknown as AnyRoute
}

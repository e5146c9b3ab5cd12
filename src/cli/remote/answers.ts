import {Type, type TSchema} from '../../lib/typebox.js'

import type {ItemResult} from '../../lib/engine.js'
import {ModError} from '../../lib/errors.js'
import {CategoriesResult, ErrorEntry, ModerationResult, Segment, VideoResult} from '../../lib/schemas.js'
import type {CategoriesResult as Categories, Segment as SegmentT, VideoResult as Video} from '../../lib/types.js'
import {CATEGORY_NAME_PATTERN} from '../../lib/names.js'
import {createAjv} from '../../server/ajv.js'
import {visible} from '../visible.js'

/**
 * What a server answers, checked against the result schemas before anything is counted or printed: a verdict is
 * only what is a well-formed verdict (`"is_safe": "false"`, `{}` or `null` is a broken server, never SAFE). Fields
 * a newer server adds are dropped, so the output holds what this mod knows how to print.
 */

// Drops the fields a closed object does not declare, rather than refusing a newer server's answers.
const ajv = createAjv({removeAdditional: true, allErrors: false})
const compiled = new Map<TSchema, ReturnType<typeof ajv.compile>>()

function check(schema: TSchema, value: unknown): string | undefined {
  let validate = compiled.get(schema)
  if (!validate) compiled.set(schema, (validate = ajv.compile(schema)))
  if (validate(value)) return undefined
  const e = validate.errors?.[0]
  return `${e?.instancePath || 'the answer'} ${e?.message ?? 'is not valid'}`
}

/** A message a server wrote for a person: shown as one line, at most a sentence long. */
export function serverMessage(text: string): string {
  return visible(text.length > MAX_MESSAGE_CHARS ? `${text.slice(0, MAX_MESSAGE_CHARS)}…` : text)
}

const MAX_MESSAGE_CHARS = 300

/** The first name that is not a category's (a name is printed in rows, annotations and rule ids). */
function badName(names: readonly string[]): string | undefined {
  return names.find((n) => !CATEGORY_NAME_PATTERN.test(n))
}

export function badAnswer(server: string, what: string, why: string): ModError {
  return new ModError('bad_server_answer', `the server ${server} answered ${what} with ${why}: is it a mod serve?`)
}

/** The results of one batch of `sent` files, each a moderation result or an error entry. */
export function batchResults(body: unknown, sent: number, server: string): ItemResult[] {
  const what = 'POST /v1/moderate/batch'
  const results = (body as {results?: unknown} | null)?.results
  if (!Array.isArray(results)) throw badAnswer(server, what, 'no results list')
  if (results.length !== sent) throw badAnswer(server, what, `${results.length} results for ${sent} files`)
  return results.map((r: unknown, i) => {
    const entry = typeof r === 'object' && r !== null && 'error' in r
    const why = check(entry ? ErrorEntry : ModerationResult, r)
    if (why) throw badAnswer(server, what, `a result that is not a verdict (results[${i}]: ${why})`)
    if ('error' in (r as ItemResult)) {
      const {source, error} = r as Extract<ItemResult, {error: unknown}>
      return {source, error: {code: error.code, message: serverMessage(error.message)}}
    }
    const result = r as Exclude<ItemResult, {error: unknown}>
    // The one rule a schema cannot say: safe exactly when nothing is violated.
    if (result.is_safe !== (result.violations.length === 0)) throw badAnswer(server, what, `a result whose is_safe contradicts its violations (results[${i}])`)
    const name = badName([...result.violations.map((v) => v.name), ...result.labels.map((l) => l.name), ...result.not_evaluated])
    if (name !== undefined) throw badAnswer(server, what, `a category name that is not one (results[${i}]: ${JSON.stringify(name)})`)
    return result
  })
}

/**
 * Refuses a verdict made under another policy than the one the run began under (GET /health): behind a balancer,
 * servers mid-deploy can differ, and a run must not mix, journal or report two policies' verdicts as one. A server
 * that states no policy (older than the header) cannot be checked.
 */
export function checkPolicy(stated: string | string[] | undefined, expected: string | undefined, server: string, what: string): void {
  if (expected === undefined || typeof stated !== 'string' || stated === expected) return
  throw new ModError(
    'bad_server_answer',
    `the server ${server} answered ${what} under policy sha256 ${visible(stated.slice(0, 12))}, where the run began under ${expected.slice(0, 12)}: ` +
      'the servers behind it do not agree on one policy (a deploy half done, or a server restarted with another); rerun once they do',
  )
}

export function categoriesResult(body: unknown, server: string): Categories {
  const why = check(CategoriesResult, body)
  if (why) throw badAnswer(server, 'GET /v1/categories', `a listing that is not valid (${why})`)
  const listing = body as Categories
  const name = badName(listing.categories.map((c) => c.name))
  if (name !== undefined) throw badAnswer(server, 'GET /v1/categories', `a category name that is not one (${JSON.stringify(name)})`)
  for (const c of listing.categories) if (c.reason !== undefined) c.reason = serverMessage(c.reason)
  return listing
}

/** What GET /health says that a remote run uses (older servers give no policy or limits). */
export interface Health {
  version: string
  policy?: {sha256: string}
  limits?: {max_batch: number; max_bytes: number; max_batch_bytes: number}
  /** Whether each of the server's signals is there (`clip: 'not_installed'`: no CLIP model). */
  signals?: {clip?: string}
}

const count = Type.Integer({minimum: 1})
const HealthFields = Type.Object({
  version: Type.String({pattern: '^[0-9A-Za-z.+-]{1,64}$'}),
  policy: Type.Optional(Type.Object({sha256: Type.String({pattern: '^[0-9a-f]{64}$'})})),
  limits: Type.Optional(Type.Object({max_batch: count, max_bytes: count, max_batch_bytes: count})),
  signals: Type.Optional(Type.Object({clip: Type.Optional(Type.String({maxLength: 40}))})),
})

export function healthResult(body: unknown, server: string): Health {
  const why = check(HealthFields, body)
  if (why) throw badAnswer(server, 'GET /health', `an answer that is not valid (${why})`)
  return body as Health
}

/** A job as GET /v1/jobs/{id} answers it: the fields a remote scan-video reads. */
export interface Job {
  id: string
  status: 'queued' | 'running' | 'done' | 'failed' | 'cancelled'
  progress: {frames_analyzed: number; seconds: number}
  segments: (SegmentT & {name: string})[]
  /** Absent from servers before it. */
  open_segments?: (SegmentT & {name: string})[]
  result?: Video
  error?: {code: string; message: string}
}

const JobFields = Type.Object({
  id: Type.String({pattern: '^[A-Za-z0-9_-]{1,128}$'}),
  status: Type.Enum(['queued', 'running', 'done', 'failed', 'cancelled']),
  progress: Type.Object({frames_analyzed: Type.Integer({minimum: 0}), seconds: Type.Number({minimum: 0})}),
  segments: Type.Array(Type.Object({name: Type.String(), ...Segment.properties})),
  open_segments: Type.Optional(Type.Array(Type.Object({name: Type.String(), ...Segment.properties}))),
  result: Type.Optional(VideoResult),
  error: Type.Optional(Type.Object({code: Type.String({pattern: '^[a-z_]{1,40}$'}), message: Type.String()})),
})

export function jobResult(body: unknown, server: string, what: string): Job {
  const why = check(JobFields, body)
  if (why) throw badAnswer(server, what, `a job that is not valid (${why})`)
  const job = body as Job
  const name = badName([...[...job.segments, ...(job.open_segments ?? [])].map((s) => s.name), ...(job.result?.violations.map((v) => v.name) ?? [])])
  if (name !== undefined) throw badAnswer(server, what, `a category name that is not one (${JSON.stringify(name)})`)
  if (job.error) job.error.message = serverMessage(job.error.message)
  return job
}

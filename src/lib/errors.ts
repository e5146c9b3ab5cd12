/** Error codes: those the REST API answers (docs/rest.md, Errors), plus the CLI-only ones (configuration, model and path problems). */
export type ErrorCode =
  | 'bad_request'
  | 'unauthorized'
  | 'url_fetch_disabled'
  | 'url_blocked'
  | 'url_fetch_failed'
  | 'url_fetch_timeout'
  | 'payload_too_large'
  | 'request_timeout'
  | 'too_many_files'
  | 'video_too_long'
  | 'unsupported_media'
  | 'unreadable_image'
  | 'too_many_uploads'
  | 'overloaded'
  | 'model_unavailable'
  | 'model_missing'
  | 'invalid_config'
  | 'ffmpeg_missing'
  | 'download_failed'
  | 'not_found'
  | 'jobs_unavailable'
  | 'too_many_jobs'
  | 'server_unreachable'
  | 'bad_server_answer'
  | 'internal'

/** An error as a value: raised once where the problem is known; adapters map the code to a status or exit code. */
export class ModError extends Error {
  readonly code: ErrorCode
  /**
   * Facts for a program, beside the message for a person. Not named `details`: uvu reads an error's `details` as its
   * diff text and stops a test file without a word when it is not text.
   */
  readonly context?: Record<string, unknown>
  /**
   * The lines of a message built of several (an invalid file's problems, one a line), which the message joins with
   * line breaks. A printer that keeps text from elsewhere to one line (a terminal, a CI log) does so line by line:
   * a line break inside one of them (a file name's) is not one of these.
   */
  readonly lines?: readonly string[]

  constructor(code: ErrorCode, message: string | readonly string[], context?: Record<string, unknown>) {
    super(typeof message === 'string' ? message : message.join('\n'))
    this.name = 'ModError'
    this.code = code
    this.context = context
    if (typeof message !== 'string') this.lines = message
  }
}

/**
 * The error of a file (or folder) with `problems`: one line `<headline>: <problem>` for one problem, else the
 * headline followed by one indented line for each.
 */
export function problemsError(code: ErrorCode, headline: string, problems: readonly string[], context?: Record<string, unknown>): ModError {
  if (problems.length === 1) return new ModError(code, `${headline}: ${problems[0]}`, context)
  return new ModError(code, [`${headline}:`, ...problems.map((p) => `  ${p}`)], context)
}

export function isModError(e: unknown): e is ModError {
  return e instanceof ModError
}

/**
 * An input of zero bytes: the same answer from every path (upload, base64, URL body, file, stdin, video), as
 * an error of the request on single-item paths and as an entry in a batch or folder scan.
 */
export function emptyFileError(): ModError {
  return new ModError('unsupported_media', 'the file is empty')
}

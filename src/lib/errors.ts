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
  readonly details?: Record<string, unknown>

  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>) {
    super(message)
    this.name = 'ModError'
    this.code = code
    this.details = details
  }
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

import {openAsBlob} from 'node:fs'
import {basename} from 'node:path'
import {setTimeout as sleep} from 'node:timers/promises'

import type {VideoOptions} from '../../lib/engine.js'
import {isModError, ModError, type ErrorCode} from '../../lib/errors.js'
import type {Segment, VideoResult} from '../../lib/types.js'
import {jobResult, type Job} from './answers.js'
import type {Client} from './client.js'

/** Polls start quick (a short clip is done in a moment) and slow down to this. */
const FIRST_POLL_MS = 200
const MAX_POLL_MS = 2000
/** A job's answer holds its segments so far (a few hundred bytes each, and a video has at most a few thousand). */
const JOB_BYTES = 16 * 1024 * 1024

/** A job's segment as the engine reports one: its name apart, without the deprecated `label` that repeats it. */
function found({name, label: _label, ...segment}: Job['segments'][number] & {label?: string}): {label: string; segment: Segment} {
  return {label: name, segment}
}

/**
 * `mod scan-video --server`: the video goes to the server's job queue (POST /v1/jobs/video, streamed from disk),
 * then the job is polled for progress and segments until it ends. A job that fails is the local command's
 * failure (its code and message). A job this command stops waiting for (Ctrl-C, --timeout, a poll that fails) is
 * cancelled on the server: nobody would read its result, and it would hold the server's queue.
 */
export async function moderateVideoRemotely(client: Client, path: string, options: VideoOptions): Promise<VideoResult> {
  const query = {fps: String(options.fps), min_frames: String(options.minFrames), stop_on_violation: String(options.stopOnViolation)}
  const posted = await client.postFiles('v1/jobs/video', 'file', [{name: basename(options.source), data: await openAsBlob(path)}], JOB_BYTES, query, {creates: true})
  const submitted = jobResult(posted.body, client.server, 'POST /v1/jobs/video')
  const where = `v1/jobs/${encodeURIComponent(submitted.id)}`
  const poll = () =>
    client.getJson(where, JOB_BYTES).catch((e: unknown) => {
      // The server's 404 says the id never existed; this run was given it, so the job was lost or deleted since.
      if (isModError(e) && e.code === 'not_found') {
        throw new ModError(
          'not_found',
          `the server ${client.server} no longer has the job ${submitted.id} it accepted for this video: it was deleted, or the server restarted and lost it ` +
            '(without MOD_REDIS_URL its jobs live in its process); run the command again',
        )
      }
      throw e
    })
  let seen = 0
  let wait = FIRST_POLL_MS
  let ended = false
  try {
    for (;;) {
      const job = jobResult(await poll(), client.server, `GET /${where}`)
      // Segments come in the order found; those not reported yet go out now.
      for (const {label, segment} of job.segments.slice(seen).map(found)) options.onSegment?.(label, segment)
      seen = job.segments.length
      // A server before `open_segments` sends none.
      options.onProgress?.(job.progress.frames_analyzed, job.progress.seconds, (job.open_segments ?? []).map(found))
      if (job.status === 'done' && job.result) return {...job.result, source: options.source}
      if (job.status === 'failed' || job.status === 'cancelled') {
        ended = true
        const e = job.error ?? {code: 'internal', message: `the job was ${job.status}`}
        throw new ModError(e.code as ErrorCode, e.message)
      }
      await sleep(wait, undefined, {signal: options.signal})
      wait = Math.min(MAX_POLL_MS, wait * 1.5)
    }
  } catch (e) {
    if (!ended) await client.deleteOnce(where)
    throw e
  }
}

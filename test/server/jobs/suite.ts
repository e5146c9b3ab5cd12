// The jobs API as a client sees it, run against each queue (in-process, BullMQ on Redis): the same
// requests and the same answers.
import {randomUUID} from 'node:crypto'
import {readdir, readFile} from 'node:fs/promises'
import {join} from 'node:path'

import {suite} from 'uvu'
import * as assert from 'uvu/assert'

import type {Engine} from '../../../src/lib/engine.js'
import {ModError} from '../../../src/lib/errors.js'
import type {VideoOptions} from '../../../src/lib/engine.js'
import {colourClip} from '../../lib/video/helpers.js'
import {call, errorOf, fakeEngine, form} from '../harness.js'

/**
 * A fake engine whose videos report one frame and one segment, then wait until released or cancelled. After
 * `ignoreAbort()` a cancelled run still waits for the release and then returns its result, as a run that had
 * finished just as it was cancelled.
 */
/** The run the holding engine leaves open at its last frame. */
const OPEN_RUN = {start: 4, end: 6, frames: 2, max_confidence: 0.9}

export function holdingEngine(): {engine: Engine; started: Promise<void>; release(): void; aborted: Promise<void>; ignoreAbort(): void} {
  let release = () => {}
  let markStarted = () => {}
  let markAborted = () => {}
  let stubborn = false
  const started = new Promise<void>((r) => (markStarted = r))
  const aborted = new Promise<void>((r) => (markAborted = r))
  const released = new Promise<void>((r) => (release = r))
  const engine = fakeEngine({
    isLoaded: () => true,
    moderateVideo: async (_path: string, o: VideoOptions) => {
      // A run closed, then one still open at the last frame, as moderateVideo reports them.
      o.onSegment?.('redness', {start: 1, end: 3, frames: 2, max_confidence: 1})
      o.onProgress?.(6, 6, [{label: 'redness', segment: OPEN_RUN}])
      markStarted()
      await new Promise<void>((resolve, reject) => {
        void released.then(resolve)
        o.signal?.addEventListener('abort', () => {
          markAborted()
          // Stopped, it announces the open run as it stood, as moderateVideo does.
          o.onSegment?.('redness', OPEN_RUN)
          if (!stubborn) reject(new ModError('bad_request', 'cancelled'))
        })
      })
      return {source: o.source, is_safe: true, duration: 3, fps: o.fps, frames_analyzed: 3, stopped_early: false, violations: [], not_evaluated: []}
    },
  })
  return {engine, started, release, aborted, ignoreAbort: () => (stubborn = true)}
}

export interface JobsTarget {
  /** A server on the toy engine that runs its jobs. */
  base: string
  /** A server on a holding engine (jobs wait until released), with a job limit of 1 waiting job. */
  holding: {base: string; started: Promise<void>; aborted: Promise<void>; release(): void; ignoreAbort(): void}
  /** MOD_JOB_STORAGE of both servers. */
  storage: string
  /** What the queue still stores of the job besides its upload (Redis keys and entries naming it). */
  stored(id: string): Promise<string[]>
  /** A folder for the test's files. */
  scratch: string
}

const FINAL = new Set(['done', 'failed', 'cancelled'])

/** Polls the job as a client would until it has ended. */
export async function finished(base: string, id: string, ms = 60_000): Promise<any> {
  const end = Date.now() + ms
  for (;;) {
    const r = await call(`${base}/v1/jobs/${id}`)
    assert.is(r.status, 200)
    if (FINAL.has(r.body.status)) return r.body
    if (Date.now() > end) throw new Error(`job ${id} still ${r.body.status}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

/**
 * Waits until nothing of the job is stored (its upload, what the queue keeps of it), then checks that it is
 * answered as an unknown job: GET and DELETE 404 not_found.
 */
async function gone(t: JobsTarget, base: string, id: string): Promise<void> {
  const left = async () => [...(await readdir(t.storage)).filter((name) => name === id), ...(await t.stored(id))]
  const end = Date.now() + 10_000
  while ((await left()).length > 0 && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 20))
  assert.equal(await left(), [], 'nothing of the job is stored')
  for (const method of ['GET', 'DELETE']) {
    const r = await call(`${base}/v1/jobs/${id}`, {method})
    assert.equal(errorOf(r), {status: 404, code: 'not_found'}, method)
    assert.match(r.body.error.message, `no job "${id}"`)
  }
}

export function submit(base: string, name: string, data: Buffer | string, query = '') {
  return call(`${base}/v1/jobs/video${query}`, {method: 'POST', body: form('file', [{name, data, type: 'video/mp4'}])})
}

export function jobsSuite(name: string, target: () => JobsTarget) {
  const s = suite(name)

  s('a video job is accepted with 202 and a Location, then done with the result of the synchronous endpoint', async () => {
    const t = target()
    const data = await readFile(await colourClip(join(t.scratch, 'clip.mp4'), ['blue', 'red', 'blue'], 2))
    const r = await submit(t.base, 'clip.mp4', data, '?fps=1&min_frames=2')
    assert.is(r.status, 202)
    assert.is(r.headers.get('location'), `/v1/jobs/${r.body.id}`)
    assert.is(r.body.status, 'queued')
    assert.is(r.body.source, 'clip.mp4')
    const job = await finished(t.base, r.body.id)
    const segment = {start: 2, end: 4, frames: 2, max_confidence: 1}
    assert.equal(
      {status: job.status, progress: job.progress, segments: job.segments, open: job.open_segments},
      {status: 'done', progress: {frames_analyzed: 6, seconds: 6}, segments: [{name: 'redness', label: 'redness', ...segment}], open: []},
    )
    const sync = await call(`${t.base}/v1/moderate/video?fps=1&min_frames=2`, {
      method: 'POST',
      body: form('file', [{name: 'clip.mp4', data, type: 'video/mp4'}]),
    })
    assert.equal(job.result, sync.body)
    assert.equal(await readdir(t.storage), [], 'the upload is removed when the job ends')
  })

  s('a job whose video ends in a flagged run ends with that run in segments, once, and none open', async () => {
    const t = target()
    const data = await readFile(await colourClip(join(t.scratch, 'ends-red.mp4'), ['blue', 'red'], 2))
    const r = await submit(t.base, 'ends-red.mp4', data, '?fps=1&min_frames=2')
    const job = await finished(t.base, r.body.id)
    assert.equal(
      {status: job.status, segments: job.segments, open: job.open_segments},
      {status: 'done', segments: [{name: 'redness', label: 'redness', start: 2, end: 4, frames: 2, max_confidence: 1}], open: []},
    )
  })

  s('a file that is not a video fails the job with the error body the synchronous endpoint answers', async () => {
    const t = target()
    const r = await submit(t.base, 'notes.mp4', 'plain words')
    assert.is(r.status, 202)
    const job = await finished(t.base, r.body.id)
    assert.is(job.status, 'failed')
    assert.is(job.error.code, 'unsupported_media')
    assert.equal(await readdir(t.storage), [])
  })

  s('segments found so far and the run still open are visible while running; DELETE stops the run, answers the job cancelled with the open run as a segment, and the job is gone', async () => {
    const t = target()
    const r = await submit(t.holding.base, 'long.mp4', 'any bytes')
    await t.holding.started
    // A queue on Redis stores progress as it comes; the client sees it on a later read.
    let running = await call(`${t.holding.base}/v1/jobs/${r.body.id}`)
    const end = Date.now() + 5000
    while (running.body.open_segments.length === 0 && Date.now() < end) {
      await new Promise((resolve) => setTimeout(resolve, 20))
      running = await call(`${t.holding.base}/v1/jobs/${r.body.id}`)
    }
    const segments = [{name: 'redness', label: 'redness', start: 1, end: 3, frames: 2, max_confidence: 1}]
    const open = [{name: 'redness', label: 'redness', ...OPEN_RUN}]
    assert.equal(
      {status: running.body.status, progress: running.body.progress, segments: running.body.segments, open: running.body.open_segments},
      {status: 'running', progress: {frames_analyzed: 6, seconds: 6}, segments, open},
    )
    const deleted = await call(`${t.holding.base}/v1/jobs/${r.body.id}`, {method: 'DELETE'})
    assert.is(deleted.status, 200)
    assert.equal(
      {id: deleted.body.id, status: deleted.body.status, progress: deleted.body.progress, segments: deleted.body.segments, open: deleted.body.open_segments},
      {id: r.body.id, status: 'cancelled', progress: {frames_analyzed: 6, seconds: 6}, segments: [...segments, ...open], open: []},
    )
    await t.holding.aborted
    await gone(t, t.holding.base, r.body.id)
  })

  s('a running job deleted does not come back when its run finishes anyway', async () => {
    const t = target()
    t.holding.ignoreAbort()
    const r = await submit(t.holding.base, 'long.mp4', 'any bytes')
    await t.holding.started
    const deleting = call(`${t.holding.base}/v1/jobs/${r.body.id}`, {method: 'DELETE'})
    await t.holding.aborted
    // The run ends with a result after the DELETE: the worker must not store it.
    t.holding.release()
    const deleted = await deleting
    assert.is(deleted.status, 200)
    assert.is(deleted.body.status, 'cancelled')
    // Once nothing is stored, the run has ended (the queue on Redis drops a held job only when its worker lets go).
    await gone(t, t.holding.base, r.body.id)
  })

  s('two DELETEs of one job at the same time: one answers the job, the other 404 not_found', async () => {
    const t = target()
    const r = await submit(t.holding.base, 'long.mp4', 'any bytes')
    await t.holding.started
    const url = `${t.holding.base}/v1/jobs/${r.body.id}`
    const answers = await Promise.all([call(url, {method: 'DELETE'}), call(url, {method: 'DELETE'})])
    const byStatus = answers.sort((a, b) => a.status - b.status)
    assert.equal(byStatus.map((a) => a.status), [200, 404])
    assert.is(byStatus[0]!.body.status, 'cancelled')
    await gone(t, t.holding.base, r.body.id)
  })

  s('a full job queue answers 503 overloaded with Retry-After; a waiting job deleted is answered cancelled and is gone', async () => {
    const t = target()
    const first = await submit(t.holding.base, 'a.mp4', 'a')
    await t.holding.started
    const second = await submit(t.holding.base, 'b.mp4', 'b')
    assert.is(second.status, 202)
    const third = await submit(t.holding.base, 'c.mp4', 'c')
    assert.equal(errorOf(third), {status: 503, code: 'overloaded'})
    assert.is(third.headers.get('retry-after'), '1')
    const cancelled = await call(`${t.holding.base}/v1/jobs/${second.body.id}`, {method: 'DELETE'})
    assert.equal([cancelled.status, cancelled.body.id, cancelled.body.status], [200, second.body.id, 'cancelled'])
    await gone(t, t.holding.base, second.body.id)
    t.holding.release()
    assert.is((await finished(t.holding.base, first.body.id)).status, 'done')
    assert.equal(await readdir(t.storage), [])
  })

  s('a finished job deleted is answered as it ended, then gone: its result is no longer readable', async () => {
    const t = target()
    const data = await readFile(await colourClip(join(t.scratch, 'ended.mp4'), ['red'], 1))
    const r = await submit(t.base, 'ended.mp4', data)
    const job = await finished(t.base, r.body.id)
    assert.is(job.status, 'done')
    const deleted = await call(`${t.base}/v1/jobs/${r.body.id}`, {method: 'DELETE'})
    assert.is(deleted.status, 200)
    assert.equal(deleted.body, job)
    await gone(t, t.base, r.body.id)
  })

  s('an unknown job id is 404 not_found and one that is not a UUID 400 bad_request, for GET and DELETE', async () => {
    const t = target()
    for (const method of ['GET', 'DELETE']) {
      const r = await call(`${t.base}/v1/jobs/${randomUUID()}`, {method})
      assert.equal(errorOf(r), {status: 404, code: 'not_found'}, method)
      const malformed = await call(`${t.base}/v1/jobs/no-such-job`, {method})
      assert.equal(malformed.body, {
        error: {code: 'bad_request', message: 'id="no-such-job" is not valid: expected a job id (a UUID, as POST /v1/jobs/video and /v1/jobs/images give)'},
      })
    }
  })

  s('a job id is a UUID, case-insensitive: the id upper-cased (or as a urn:uuid: URN) reads and deletes the same job', async () => {
    const t = target()
    const r = await submit(t.holding.base, 'long.mp4', 'any bytes')
    const id: string = r.body.id
    for (const spelling of [id.toUpperCase(), `urn:uuid:${id.toUpperCase()}`]) {
      const read = await call(`${t.holding.base}/v1/jobs/${spelling}`)
      assert.equal([read.status, read.body.id], [200, id], spelling)
    }
    const deleted = await call(`${t.holding.base}/v1/jobs/${id.toUpperCase()}`, {method: 'DELETE'})
    assert.equal([deleted.status, deleted.body.id], [200, id])
    assert.is((await call(`${t.holding.base}/v1/jobs/${id}`)).status, 404)
  })

  s("a video job's id on the results pages is 404 not_found saying it is a video job and where its result is", async () => {
    const t = target()
    const r = await submit(t.holding.base, 'long.mp4', 'any bytes')
    const id = r.body.id
    const results = await call(`${t.holding.base}/v1/jobs/${id}/results`)
    assert.equal(results.body, {
      error: {code: 'not_found', message: `job "${id}" is a video job: results pages are for image jobs; its result is in GET /v1/jobs/${id}`},
    })
    assert.is(results.status, 404)
  })

  s('a callback URL on a private address is refused before the upload is read', async () => {
    const t = target()
    const r = await submit(t.base, 'clip.mp4', 'x', `?callback_url=${encodeURIComponent('http://10.0.0.1/hook')}`)
    assert.equal(errorOf(r), {status: 422, code: 'url_blocked'})
    assert.equal(await readdir(t.storage), [])
    const long = await submit(t.base, 'clip.mp4', 'x', `?callback_url=${encodeURIComponent(`https://hooks.example/${'a'.repeat(8192)}`)}`)
    assert.equal([long.status, long.body.error.message], [400, 'callback_url is too long: at most 8192 characters'])
    // A wrong value is quoted cut, not repeated whole.
    const wrong = await submit(t.base, 'clip.mp4', 'x', `?callback_url=${'x'.repeat(500)}`)
    assert.equal([wrong.status, wrong.body.error.message], [400, `callback_url="${'x'.repeat(64)}…" is not valid: expected an absolute http(s) URL`])
  })

  return s
}

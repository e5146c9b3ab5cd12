import {Type, type Static} from '../../lib/typebox.js'

import {Segment, VideoResult} from '../../lib/schemas.js'
import type {FoundSegment} from '../../lib/video/segments.js'
import {ErrorCode} from '../schemas.js'

const closed = {additionalProperties: false} as const

export const JOB_STATUSES = ['queued', 'running', 'done', 'failed', 'cancelled'] as const

export const JobSegment = Type.Object(
  {
    name: Type.String({description: 'The violated category, as `name` in video results and in `mod scan-video --ndjson`.'}),
    label: Type.String({
      deprecated: true,
      description: 'The same as `name`, kept for clients written before `name`; it will be removed in a later version.',
    }),
    // A video result's segment, its signals' fields included.
    ...Segment.properties,
  },
  {
    ...closed,
    description:
      'A segment found so far: in `segments` once its run of frames has closed; in `open_segments` while it is still ' +
      'open, its `end` then being the last frame analysed.',
  },
)

/** A segment as a job reports it: `label` repeats `name` for older clients. */
function jobSegment(name: string, segment: Static<typeof Segment>): Static<typeof JobSegment> {
  return {name, label: name, ...segment}
}

/** The runs a video's analysis reports open (moderate.ts onProgress), as a job's `open_segments`. */
export function openSegments(open: readonly FoundSegment[]): Static<typeof JobSegment>[] {
  return open.map((found) => jobSegment(found.label, found.segment))
}

/**
 * A job's segments once the run of `name` that `segment` reports has closed: added to `segments`, and out of
 * `open_segments`, where it stood until now (the same category and start).
 */
export function closedSegment(job: Pick<JobBody, 'segments' | 'open_segments'>, name: string, segment: Static<typeof Segment>): Pick<JobBody, 'segments' | 'open_segments'> {
  return {
    segments: [...job.segments, jobSegment(name, segment)],
    open_segments: job.open_segments.filter((open) => open.name !== name || open.start !== segment.start),
  }
}

/** A job as GET /v1/jobs/{id} answers it and as its callback carries it. */
export const Job = Type.Object(
  {
    id: Type.String({description: 'The job id; the job is at `/v1/jobs/{id}`.'}),
    status: Type.Enum(JOB_STATUSES, {
      description:
        '`queued` (waiting for a worker), `running`, then `done` (with `result`), `failed` (with `error`) or ' +
        '`cancelled` (by DELETE).',
    }),
    source: Type.String({description: 'The uploaded file name.'}),
    created_at: Type.String({format: 'date-time'}),
    updated_at: Type.String({format: 'date-time'}),
    progress: Type.Object(
      {
        frames_analyzed: Type.Integer({minimum: 0}),
        seconds: Type.Number({minimum: 0, description: 'Seconds of video analysed so far.'}),
      },
      closed,
    ),
    segments: Type.Array(JobSegment, {description: 'Segments found so far, in the order found.'}),
    open_segments: Type.Array(JobSegment, {
      description:
        'While the job runs: the runs of flagged frames still open that are long enough (`min_frames`) to be kept, as ' +
        'they stand at the last frame analysed. Each grows until it closes and moves to `segments`; empty once the ' +
        'job has ended (a run open at the end or at a cancel is then in `segments`).',
    }),
    result: Type.Optional(VideoResult),
    error: Type.Optional(Type.Object({code: ErrorCode, message: Type.String()}, closed)),
  },
  closed,
)

export type JobBody = Static<typeof Job>

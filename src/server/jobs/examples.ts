import {EXAMPLE_VIDEO} from '../examples.js'

/** A job as the document shows it: running, one segment found so far and a run still open at the last frame. */
export const EXAMPLE_JOB = {
  id: '5f0c7a1e-8a7b-4a53-9a51-3f1f9d0e2c41',
  status: 'running',
  source: EXAMPLE_VIDEO.source,
  created_at: '2026-01-01T12:00:00.000Z',
  updated_at: '2026-01-01T12:00:04.000Z',
  progress: {frames_analyzed: 8, seconds: 8},
  segments: [{name: 'weapons', label: 'weapons', start: 2, end: 6, frames: 4, max_confidence: 0.93}],
  open_segments: [{name: 'gore', label: 'gore', start: 7, end: 8, frames: 1, max_confidence: 0.71}],
}

/** The same job as DELETE answers it: stopped where it was, the run open then a segment as it stood. */
export const EXAMPLE_CANCELLED_JOB = {
  ...EXAMPLE_JOB,
  status: 'cancelled',
  updated_at: '2026-01-01T12:00:05.000Z',
  segments: [...EXAMPLE_JOB.segments, ...EXAMPLE_JOB.open_segments],
  open_segments: [],
}

import type {Engine} from '../../lib/engine.js'
import type {JobRunner} from './types.js'

/** Runs a job's video on the engine, reporting progress and segments as they are found. */
export function videoJobRunner(engine: Engine): JobRunner {
  return (spec, hooks) =>
    engine.moderateVideo(spec.file, {
      source: spec.source,
      fps: spec.fps,
      minFrames: spec.minFrames,
      stopOnViolation: spec.stopOnViolation,
      signal: hooks.signal,
      onProgress: (frames, seconds, open) => hooks.onProgress(frames, seconds, open),
      onSegment: (label, segment) => hooks.onSegment(label, segment),
    })
}

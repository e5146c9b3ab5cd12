import type {RgbImage} from '../image/rgb.js'
import type {OpenEvidence} from '../signals/evidence.js'
import type {Segment, VideoResult} from '../types.js'
import {type DecodedFrame, type DecodeOptions, type DecodeSummary, decodeFrames} from './frames.js'
import {createSegmentTracker, type FoundSegment, type FrameLabel} from './segments.js'

export interface ModerateVideoOptions {
  /** Reported as `source` in the result. */
  source: string
  fps: number
  minFrames: number
  stopOnViolation: boolean
  /** Frames scored per call of `scoreFrames`; at most this many decoded frames are held at once. */
  batchSize: number
  /** The ffmpeg binary and the decoding limits. */
  decode: Omit<DecodeOptions, 'fps' | 'signal' | 'onDuration'>
  /**
   * Scores a batch of frames (the engine trims, preprocesses, embeds and scores): per frame, its labels and what
   * the signals found in it.
   */
  scoreFrames: (frames: RgbImage[]) => Promise<ScoredFrame[]>
  /** The open signals' evidence kinds: how a segment gathers what its frames' signals found (none: segments carry scores only). */
  evidence?: readonly OpenEvidence[]
  /** Called for each kept segment once its run has closed (the open ones at the end), in the order found. */
  onSegment?: (label: string, segment: Segment) => void
  /**
   * Called after each batch with the frames analysed, the seconds of video they cover, and the runs of flagged
   * frames still open that are long enough to be kept, as segments ending there (they may grow, then close).
   */
  onProgress?: (framesDone: number, seconds: number, open: FoundSegment[]) => void
  /** When set, called once with the duration the container states (a progress estimate), if it states one. */
  onDuration?: (seconds: number) => void
  signal?: AbortSignal
}

export interface ScoredFrame {
  labels: FrameLabel[]
  /** What each signal found in the frame, by signal name. */
  evidence?: ReadonlyMap<string, unknown>
}

const round3 = (x: number): number => Math.round(x * 1000) / 1000

/** A batch's scored frames grouped by sampling instant (frames come instant by instant), with the instant's number. */
function instants(batch: readonly DecodedFrame[], scores: readonly ScoredFrame[]): {index: number; frames: ScoredFrame[]}[] {
  const groups: {index: number; frames: ScoredFrame[]}[] = []
  for (const [i, frame] of batch.entries()) {
    if (i === 0 || frame.index !== batch[i - 1].index) groups.push({index: frame.index, frames: []})
    groups[groups.length - 1].frames.push(scores[i])
  }
  return groups
}

/**
 * Moderates a video file: samples frames of every video stream, scores them in batches and reports per-label
 * segments on the one timeline, an instant violating a label when any stream's frame there does (docs/video.md). With `stopOnViolation`, analysis stops at the frame that completes a segment of
 * `minFrames` frames, ffmpeg is killed, and `duration` is where the span analysed ends. Errors are those of
 * `decodeFrames` and of `scoreFrames`; ffmpeg never outlives the call.
 */
export async function moderateVideo(path: string, o: ModerateVideoOptions): Promise<Omit<VideoResult, 'not_evaluated'>> {
  const tracker = createSegmentTracker(o.fps, o.minFrames, o.evidence)
  // The stated duration comes from the description of the file that decoding reads first for its streams.
  const frames = decodeFrames(path, {...o.decode, fps: o.fps, onDuration: o.onDuration, signal: o.signal})
  let analyzed = 0
  // The first instant's number on the file's timeline (0 unless the file starts later): where the span analysed ends.
  let first = 0
  const reached = (): number => round3((first + analyzed) / o.fps)
  let stoppedEarly = false
  let summary: DecodeSummary | undefined

  try {
    let batch: DecodedFrame[] = []
    while (summary === undefined && !stoppedEarly) {
      const next = await frames.next()
      if (next.done) summary = next.value
      else {
        if (analyzed === 0 && batch.length === 0) first = next.value.index
        batch.push(next.value)
      }
      // A batch holds whole instants (all streams' frames of each), so it may pass batchSize by a few frames.
      if ((!next.done && next.value.last && batch.length >= o.batchSize) || (next.done && batch.length > 0)) {
        const scores = await o.scoreFrames(batch.map((f) => f.image))
        // Instant by instant, so that where a stop happens does not depend on the batch size.
        for (const instant of instants(batch, scores)) {
          if (stoppedEarly) break
          for (const found of tracker.pushInstant(instant.frames, instant.index)) o.onSegment?.(found.label, found.segment)
          analyzed++
          stoppedEarly = o.stopOnViolation && tracker.hasSegment()
        }
        o.onProgress?.(analyzed, round3(analyzed / o.fps), tracker.open())
        batch = []
      }
    }
  } catch (e) {
    // Stopped from outside (a job cancelled, Ctrl-C): the runs open so far are announced as they stand, as the
    // closed ones were, rather than lost with the frames already scored.
    if (o.signal?.aborted) for (const found of tracker.finish(reached()).closed) o.onSegment?.(found.label, found.segment)
    throw e
  } finally {
    // Kills ffmpeg when we leave before the end (a stop, a scoring error); does nothing once decoding ended.
    await frames.return({frames: analyzed, duration: analyzed / o.fps})
  }

  const duration = summary !== undefined && !stoppedEarly ? round3(summary.duration) : reached()
  const {closed, violations} = tracker.finish(duration)
  for (const found of closed) o.onSegment?.(found.label, found.segment)
  return {
    source: o.source,
    is_safe: violations.length === 0,
    duration,
    fps: o.fps,
    frames_analyzed: analyzed,
    stopped_early: stoppedEarly,
    violations,
  }
}

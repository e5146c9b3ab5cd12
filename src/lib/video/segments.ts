import {decideViolation, type ScoredLabel} from '../scoring/result.js'
import {segmentGatherer, type OpenEvidence, type SegmentGatherer} from '../signals/evidence.js'
import type {Segment, VideoViolation} from '../types.js'

/** What a segment needs of a frame's label: its score. */
export type FrameLabel = Pick<ScoredLabel, 'name' | 'parent' | 'threshold' | 'score'>

/** One stream's frame at a sampling instant: its labels, and what the signals found in it. */
export interface InstantFrame {
  labels: readonly FrameLabel[]
  evidence?: ReadonlyMap<string, unknown>
}

export interface FoundSegment {
  label: string
  segment: Segment
}

export interface SegmentTracker {
  /**
   * Adds the next sampled frame's scores and what the signals found in it (by signal name); returns the segments
   * this frame closed (runs that just ended and are kept).
   */
  push(labels: readonly FrameLabel[], evidence?: ReadonlyMap<string, unknown>): FoundSegment[]
  /**
   * Adds the next sampling instant as `push` does a frame, from the frames of every video stream at that instant:
   * a label is violated there when it is in any of them, at the highest of their scores, with what the signals
   * found in those frames. `index`: the instant's number on the file's timeline (its time is index / fps), when the
   * first is not 0; the next one's by default.
   */
  pushInstant(frames: readonly InstantFrame[], index?: number): FoundSegment[]
  /** True once some label has a run of at least min_frames frames, closed or still open. */
  hasSegment(): boolean
  /**
   * The runs still open that are long enough to be kept, as segments ending after the last frame pushed; they stay
   * open (a later frame extends or closes them).
   */
  open(): FoundSegment[]
  /** Closes the open runs (their end capped at `duration`); returns them and the violations of the whole video. */
  finish(duration: number): {closed: FoundSegment[]; violations: VideoViolation[]}
}

interface Run {
  first: number
  frames: number
  max: number
  /** What the signals found in the run's frames, gathered for its category. */
  evidence: SegmentGatherer
}

interface LabelState {
  label: FrameLabel
  segments: Segment[]
  run?: Run
}

const round = (x: number, digits: number): number => Math.round(x * 10 ** digits) / 10 ** digits

/**
 * Segments per label: a run of consecutive sampled frames whose score is >= the label's
 * threshold, from the first frame's time to the last one's plus 1/fps (capped at the duration); runs of fewer
 * than `minFrames` frames are dropped. Times are rounded to 3 decimals, confidences to 4. A segment carries what
 * the signals found in its frames, each signal's gathered by its evidence kind (`evidence`: the open signals').
 */
export function createSegmentTracker(fps: number, minFrames: number, evidence: readonly OpenEvidence[] = []): SegmentTracker {
  const states = new Map<string, LabelState>()
  let frames = 0

  const segmentOf = (run: Run, duration: number): Segment => ({
    start: round(run.first / fps, 3),
    end: round(Math.min((run.first + run.frames) / fps, duration), 3),
    frames: run.frames,
    max_confidence: round(run.max, 4),
    ...run.evidence.fields(),
  })

  function close(state: LabelState, duration: number): FoundSegment[] {
    const run = state.run
    state.run = undefined
    if (run === undefined || run.frames < minFrames) return []
    const segment = segmentOf(run, duration)
    state.segments.push(segment)
    return [{label: state.label.name, segment}]
  }

  function pushInstant(instant: readonly InstantFrame[], index = frames): FoundSegment[] {
    frames = index
    const closed: FoundSegment[] = []
    // Per label, in the order of the first frame's labels: its highest violating score and those frames' evidence.
    const merged = new Map<string, {label: FrameLabel; violated: boolean; max: number; found: ReadonlyMap<string, unknown>[]}>()
    for (const frame of instant) {
      for (const label of frame.labels) {
        const m = merged.get(label.name) ?? {label, violated: false, max: 0, found: []}
        merged.set(label.name, m)
        // Decided as an image's violations are.
        const {score, violated} = decideViolation(label.score, label.threshold)
        if (!violated) continue
        m.violated = true
        m.max = Math.max(m.max, score)
        if (frame.evidence) m.found.push(frame.evidence)
      }
    }
    for (const {label, violated, max, found} of merged.values()) {
      let state = states.get(label.name)
      if (state === undefined) {
        state = {label, segments: []}
        states.set(label.name, state)
      }
      if (violated) {
        if (state.run === undefined) state.run = {first: frames, frames: 0, max: 0, evidence: segmentGatherer(evidence, label.name)}
        state.run.frames++
        state.run.max = Math.max(state.run.max, max)
        for (const f of found) state.run.evidence.add(f, frames / fps)
      } else {
        // A run that closes before the last frame ends at the next frame's time, never past the duration.
        closed.push(...close(state, Infinity))
      }
    }
    frames++
    return closed
  }

  return {
    push: (labels, found) => pushInstant([{labels, evidence: found}]),
    pushInstant,

    hasSegment() {
      return [...states.values()].some((s) => s.segments.length > 0 || (s.run?.frames ?? 0) >= minFrames)
    },

    open() {
      return [...states.values()].flatMap((s) => (s.run !== undefined && s.run.frames >= minFrames ? [{label: s.label.name, segment: segmentOf(s.run, Infinity)}] : []))
    },

    finish(duration) {
      const closed = [...states.values()].flatMap((s) => close(s, duration))
      const violations: VideoViolation[] = [...states.values()]
        .filter((s) => s.segments.length > 0)
        .map((s) => ({
          name: s.label.name,
          parent: s.label.parent,
          threshold: s.label.threshold,
          max_confidence: s.segments.reduce((m, g) => Math.max(m, g.max_confidence), -Infinity),
          segments: s.segments,
        }))
        .sort((a, b) => b.max_confidence - a.max_confidence || a.name.localeCompare(b.name))
      return {closed, violations}
    },
  }
}

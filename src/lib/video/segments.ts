import {decideViolation, type ScoredLabel} from '../scoring/result.js'
import type {HashListMatch} from '../signals/signal.js'
import type {Segment, SegmentMatch, TextHit, TextLine, VideoViolation} from '../types.js'

/** What a segment needs of a frame's label: its score, and the hash-list matches that count in it, if any. */
export type FrameLabel = Pick<ScoredLabel, 'name' | 'parent' | 'threshold' | 'score'> & {matches?: readonly HashListMatch[]}

/** The text read in a frame, the rules' hits and whether reading stopped early, when the policy reads the text of videos. */
export interface FrameText {
  text: TextLine[]
  hits: TextHit[]
  truncated: boolean
}

export interface FoundSegment {
  label: string
  segment: Segment
}

export interface SegmentTracker {
  /**
   * Adds the next sampled frame's scores (and its text, when read); returns the segments this frame closed (runs
   * that just ended and are kept).
   */
  push(labels: readonly FrameLabel[], text?: FrameText): FoundSegment[]
  /** True once some label has a run of at least min_frames frames, closed or still open. */
  hasSegment(): boolean
  /** Closes the open runs (their end capped at `duration`); returns them and the violations of the whole video. */
  finish(duration: number): {closed: FoundSegment[]; violations: VideoViolation[]}
}

interface Run {
  first: number
  frames: number
  max: number
  /** Per listed entry (list, label, note): its nearest match over the run's frames, the first at that distance. */
  matches: Map<string, SegmentMatch>
  /** Lines and hits of its frames, each once: by text, and by rule and text; whether reading stopped early in one. */
  text?: {lines: Map<string, TextLine>; hits: Map<string, TextHit>; truncated: boolean}
}

function addText(run: Run, label: string, found: FrameText): void {
  run.text ??= {lines: new Map(), hits: new Map(), truncated: false}
  run.text.truncated ||= found.truncated
  for (const line of found.text) if (!run.text.lines.has(line.text)) run.text.lines.set(line.text, line)
  for (const hit of found.hits) {
    const key = JSON.stringify([hit.rule, hit.text])
    if (hit.category === label && !run.text.hits.has(key)) run.text.hits.set(key, hit)
  }
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
 * than `minFrames` frames are dropped. Times are rounded to 3 decimals, confidences to 4. A segment lists the
 * hash-list matches of its frames (the label's, on frames where it is violated) and, where frames carry the
 * text read, its frames' lines and the hits of its label's rules, each once.
 */
export function createSegmentTracker(fps: number, minFrames: number): SegmentTracker {
  const states = new Map<string, LabelState>()
  let frames = 0

  function close(state: LabelState, duration: number): FoundSegment[] {
    const run = state.run
    state.run = undefined
    if (run === undefined || run.frames < minFrames) return []
    const segment: Segment = {
      start: round(run.first / fps, 3),
      end: round(Math.min((run.first + run.frames) / fps, duration), 3),
      frames: run.frames,
      max_confidence: round(run.max, 4),
      ...(run.text && {text: [...run.text.lines.values()], text_hits: [...run.text.hits.values()], text_truncated: run.text.truncated}),
    }
    if (run.matches.size > 0) segment.matches = [...run.matches.values()].sort((a, b) => a.distance - b.distance || a.at - b.at)
    state.segments.push(segment)
    return [{label: state.label.name, segment}]
  }

  return {
    push(labels, text) {
      const closed: FoundSegment[] = []
      for (const label of labels) {
        let state = states.get(label.name)
        if (state === undefined) {
          state = {label, segments: []}
          states.set(label.name, state)
        }
        // Decided as an image's violations are.
        const {score, violated} = decideViolation(label.score, label.threshold)
        if (violated) {
          if (state.run === undefined) state.run = {first: frames, frames: 0, max: 0, matches: new Map()}
          state.run.frames++
          state.run.max = Math.max(state.run.max, score)
          if (text) addText(state.run, label.name, text)
          for (const m of label.matches ?? []) {
            const key = JSON.stringify([m.list, m.label, m.note])
            const seen = state.run.matches.get(key)
            if (!seen || m.distance < seen.distance) state.run.matches.set(key, {list: m.list, label: m.label, note: m.note, distance: m.distance, at: round(frames / fps, 3)})
          }
        } else {
          // A run that closes before the last frame ends at the next frame's time, never past the duration.
          closed.push(...close(state, Infinity))
        }
      }
      frames++
      return closed
    },

    hasSegment() {
      return [...states.values()].some((s) => s.segments.length > 0 || (s.run?.frames ?? 0) >= minFrames)
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

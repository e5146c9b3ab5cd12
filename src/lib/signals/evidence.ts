/**
 * The signals' evidence, merged generically: what the open signals found in the frames of an image becomes the
 * result's fields, what they found in the frames of a video segment becomes the segment's, each signal's through
 * its own evidence kind (signal.ts), in registry order.
 */
import type {TProperties} from '../typebox.js'

import type {EvidenceKind, SegmentEvidence, Signal} from './signal.js'

/** An open signal that reports evidence. */
export interface OpenEvidence {
  name: string
  kind: EvidenceKind
}

/** The evidence kinds of the signals open, in registry order. */
export function openEvidence(registry: readonly Signal[], open: ReadonlySet<string>): OpenEvidence[] {
  return registry.flatMap((s) => (s.evidence && open.has(s.name) ? [{name: s.name, kind: s.evidence}] : []))
}

/** An image result's evidence fields from each frame's evidence (per signal name; a frame not looked at has none). */
export function imageEvidence(kinds: readonly OpenEvidence[], frames: readonly ReadonlyMap<string, unknown>[]): Record<string, unknown> {
  const fields: Record<string, unknown> = {}
  for (const {name, kind} of kinds) {
    const found = frames.flatMap((f) => (f.has(name) ? [f.get(name)] : []))
    Object.assign(fields, kind.image(found))
  }
  return fields
}

/** What one segment gathers from its frames, for every open signal that reports in segments. */
export interface SegmentGatherer {
  add(frame: ReadonlyMap<string, unknown>, at: number): void
  fields(): Record<string, unknown>
}

export function segmentGatherer(kinds: readonly OpenEvidence[], category: string): SegmentGatherer {
  const parts = kinds.flatMap(({name, kind}): {name: string; part: SegmentEvidence<unknown>}[] => (kind.segment ? [{name, part: kind.segment(category)}] : []))
  return {
    add(frame, at) {
      for (const {name, part} of parts) if (frame.has(name)) part.add(frame.get(name), at)
    },
    fields: () => Object.assign({}, ...parts.map(({part}) => part.fields())) as Record<string, unknown>,
  }
}

/** The kinds' notes on a violated category (a table row), or on a segment. */
export function evidenceNotes(kinds: readonly EvidenceKind[], fields: Record<string, unknown>, category: string, where: 'image' | 'segment'): string {
  return kinds.map((k) => (where === 'image' ? k.note : k.segmentNote)?.(fields, category) ?? '').join('')
}

/** Every evidence field the kinds declare, for images or for segments: what the result schemas add to their own. */
export function evidenceFields(kinds: readonly EvidenceKind[], where: 'image' | 'segment'): TProperties {
  return Object.assign({}, ...kinds.map((k) => (where === 'image' ? k.imageFields : (k.segmentFields ?? {})))) as TProperties
}

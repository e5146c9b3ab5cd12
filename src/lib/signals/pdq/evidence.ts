/**
 * What the hash-list signal reports in results: per list, the nearest listed entry an image matched; per video
 * segment, each listed entry its frames matched, nearest first.
 */
import {Type, type Static} from '../../typebox.js'

import {closed} from '../../schema-parts.js'
import type {EvidenceKind, SegmentEvidence} from '../signal.js'

/** Which entry of which hash list matched. */
const listedEntry = {
  list: Type.String({description: "The hash list's name in the policy."}),
  label: Type.String({description: "The listed entry's label (empty when the line has none)."}),
  note: Type.String({description: "The listed entry's note (empty when the line has none)."}),
}

export const HashListMatch = Type.Object(
  {
    ...listedEntry,
    distance: Type.Integer({minimum: 0, maximum: 256, description: 'Hamming distance between the PDQ hashes (of the nearest rotation or mirror).'}),
    category: Type.String({description: 'The category the match counts in, with confidence 1 - distance / 64.'}),
  },
  {...closed, description: 'The image matched an entry of a hash list of the policy.'},
)

export const SegmentMatch = Type.Object(
  {
    ...listedEntry,
    distance: Type.Integer({minimum: 0, maximum: 256, description: 'The smallest Hamming distance over the frames of the segment.'}),
    at: Type.Number({minimum: 0, description: 'Seconds: the timestamp of the first frame at that distance.'}),
  },
  {...closed, description: "Frames of the segment matched an entry of a hash list of the policy (the segment's category is the list's)."},
)

export type HashListMatch = Static<typeof HashListMatch>
export type SegmentMatch = Static<typeof SegmentMatch>

const imageFields = {
  matches: Type.Optional(
    Type.Array(HashListMatch, {
      description: "Present when the image matched a hash list of the policy: per list, its nearest entry (over an animation's frames), nearest first.",
    }),
  ),
}

const segmentFields = {
  matches: Type.Optional(
    Type.Array(SegmentMatch, {
      description: "Present when frames of the segment matched the policy's hash lists: each listed entry once, nearest first.",
    }),
  ),
}

const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

/** Per list, its nearest match over every frame; nearest first, then by list name. */
export function bestMatches(matches: readonly HashListMatch[]): HashListMatch[] {
  const best = new Map<string, HashListMatch>()
  for (const m of matches) {
    const seen = best.get(m.list)
    if (seen === undefined || m.distance < seen.distance) best.set(m.list, m)
  }
  return [...best.values()].sort((a, b) => a.distance - b.distance || byName(a.list, b.list))
}

const round3 = (x: number) => Math.round(x * 1000) / 1000

/** Per listed entry (list, label, note), its nearest match over the run's frames that counts in `category`, the first at that distance. */
function segment(category: string): SegmentEvidence<HashListMatch[]> {
  const matches = new Map<string, Static<typeof SegmentMatch>>()
  return {
    add(found, at) {
      for (const m of found) {
        if (m.category !== category) continue
        const key = JSON.stringify([m.list, m.label, m.note])
        const seen = matches.get(key)
        if (!seen || m.distance < seen.distance) matches.set(key, {list: m.list, label: m.label, note: m.note, distance: m.distance, at: round3(at)})
      }
    },
    fields: () => (matches.size > 0 ? {matches: [...matches.values()].sort((a, b) => a.distance - b.distance || a.at - b.at)} : {}),
  }
}

function clock(seconds: number): string {
  const m = Math.floor(seconds / 60)
  return `${m}:${(seconds - m * 60).toFixed(1).padStart(4, '0')}`
}

/** One frame's matches, nearest first, each with the category its list counts in. */
export const hashListEvidence: EvidenceKind<HashListMatch[], typeof imageFields, typeof segmentFields> = {
  imageFields,
  segmentFields,
  image: (frames) => {
    const matches = bestMatches(frames.flat())
    return matches.length > 0 ? {matches} : {}
  },
  segment,
  note: (fields, category) => {
    const m = fields.matches?.find((x) => x.category === category)
    return m ? ` (list ${m.list}: ${JSON.stringify(m.label)}, distance ${m.distance})` : ''
  },
  segmentNote: (fields) => {
    const m = fields.matches?.[0]
    return m ? ` (list ${m.list}: ${JSON.stringify(m.label)}, distance ${m.distance} at ${clock(m.at)})` : ''
  },
  notes: (fields) => (fields.matches ?? []).map((m) => `hash list ${m.list}: "${m.label}" at distance ${m.distance} (${m.category})`),
}

/**
 * What the text signal reports in results: the lines read, the rules that matched them and whether reading
 * stopped early; in a video segment, what its frames read (when the policy reads the text of videos).
 */
import {Type, type Static} from '../../typebox.js'

import {closed, pixelBox} from '../../schema-parts.js'
import {onceEach} from '../overlap.js'
import type {EvidenceKind, SegmentEvidence} from '../signal.js'

const boxDescription =
  '[x, y, width, height] in pixels of the image as uploaded (after EXIF rotation), any border trim undone: the upright rectangle around the line.'

export const TextLine = Type.Object(
  {
    text: Type.String({description: 'The line as read.'}),
    confidence: Type.Number({minimum: 0, maximum: 1, description: "The reader's mean confidence over the line's characters."}),
    box: pixelBox(boxDescription),
  },
  {...closed, description: 'A line of text read in the image.'},
)

export const TextHit = Type.Object(
  {
    rule: Type.String({description: "The text rule's name in the policy."}),
    category: Type.String({description: 'The category it feeds: a hit scores it 1.'}),
    text: Type.String({description: 'The text matched, as read (Unicode NFKC); a phrase over several lines of one block of text gives their parts joined by a space.'}),
    box: pixelBox(boxDescription.replace('the line', 'the line it was read in (around its lines, for a phrase over several)')),
    detector: Type.Optional(Type.String({description: 'For a `detect` rule: the contact detector that found it (email, phone, url, handle).'})),
  },
  {...closed, description: 'A text rule of the policy that matched a line read in the image.'},
)

export type TextLine = Static<typeof TextLine>
export type TextHit = Static<typeof TextHit>

/** What was read in one frame: its lines and the rules' hits (boxes in the image's pixels), and whether reading stopped early. */
export interface FrameText {
  lines: TextLine[]
  hits: TextHit[]
  truncated: boolean
}

const imageFields = {
  text: Type.Optional(
    Type.Array(TextLine, {
      description:
        'Present when the policy has text rules: the lines of text read (for an animation, in every frame scored), in reading order; empty when none was read.',
    }),
  ),
  text_hits: Type.Optional(
    Type.Array(TextHit, {
      description: 'Present when the policy has text rules: the rules that matched the text read, in reading order; empty when none did.',
    }),
  ),
  text_truncated: Type.Optional(
    Type.Boolean({
      description:
        "Present when the policy has text rules: true when reading stopped early and lines of the image were left unread. An image reads the first lines in reading order while its budget lasts: by default 32 768 recogniser columns (the lines' widths at 48 px high; a receipt of 90 lines fits), set by the policy's text.budget or MOD_TEXT_BUDGET; an animation reads at most 3 of its frames scored, sharing that budget, and is truncated when it has more.",
    }),
  ),
}

const segmentFields = {
  text: Type.Optional(
    Type.Array(TextLine, {
      description:
        "Present when the policy reads the text of videos (`text: {video: true}`): the lines read in the segment's frames, each text once (with its box in the first frame it was read in), in the order first read.",
    }),
  ),
  text_hits: Type.Optional(
    Type.Array(TextHit, {
      description:
        "Present when the policy reads the text of videos: the hits of the rules feeding this segment's category in its frames, each rule and text once (with the box where first read); empty when text rules did not flag it.",
    }),
  ),
  text_truncated: Type.Optional(
    Type.Boolean({
      description:
        "Present when the policy reads the text of videos: true when reading stopped early in some of the segment's frames (each frame reads within the budget of an image).",
    }),
  ),
}

/** A segment's lines (each text once) and the hits of its category's rules (each rule and text once). */
function segment(category: string): SegmentEvidence<FrameText> {
  const lines = new Map<string, TextLine>()
  const hits = new Map<string, TextHit>()
  let truncated = false
  let read = false
  return {
    add(found) {
      read = true
      truncated ||= found.truncated
      for (const line of found.lines) if (!lines.has(line.text)) lines.set(line.text, line)
      for (const hit of found.hits) {
        const key = JSON.stringify([hit.rule, hit.text])
        if (hit.category === category && !hits.has(key)) hits.set(key, hit)
      }
    },
    fields: () => (read ? {text: [...lines.values()], text_hits: [...hits.values()], text_truncated: truncated} : {}),
  }
}

/** The first hit behind a violation: ` (text rule contacts: "deals@example.org")`. */
function hitNote(hits: readonly TextHit[] | undefined, category: string): string {
  const h = hits?.find((x) => x.category === category)
  return h ? ` (text rule ${h.rule}: ${JSON.stringify(h.text)})` : ''
}

export const textEvidence: EvidenceKind<FrameText, typeof imageFields, typeof segmentFields> = {
  imageFields,
  segmentFields,
  image: (frames) => ({
    text: onceEach(
      frames.flatMap((f) => f.lines),
      (a, b) => a.text === b.text,
    ),
    text_hits: onceEach(
      frames.flatMap((f) => f.hits),
      (a, b) => a.rule === b.rule && a.text === b.text,
    ),
    text_truncated: frames.some((f) => f.truncated),
  }),
  segment,
  note: (fields, category) => hitNote(fields.text_hits, category),
  segmentNote: (fields, category) => hitNote(fields.text_hits, category),
  marks: (fields) => [
    ...(fields.text ?? []).map((l) => ({box: l.box, kind: 'line' as const, caption: l.text})),
    ...(fields.text_hits ?? []).map((t) => ({box: t.box, kind: 'hit' as const, caption: `${t.rule}: ${t.text}`})),
  ],
  notes: (fields) => (fields.text_hits ?? []).map((t) => `text rule ${t.rule} (${t.category}): "${t.text}"`),
}

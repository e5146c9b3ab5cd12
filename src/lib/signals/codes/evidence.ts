/**
 * What the codes signal reports in results: the codes read (format, payload, box) and the rules they hit; in a
 * video segment, the codes its frames held and the hits of the rules feeding its category.
 */
import {Type, type Static} from '../../typebox.js'

import {closed, pixelBox} from '../../schema-parts.js'
import {onceEach} from '../overlap.js'
import type {EvidenceKind, SegmentEvidence} from '../signal.js'
import {CODE_FORMATS} from './formats.js'

const boxDescription = '[x, y, width, height] in pixels of the image as uploaded (after EXIF rotation), any border trim undone: the upright rectangle around the code.'
const format = () => Type.Enum(CODE_FORMATS, {description: 'The kind of code: qr_code, ean_13, code_128...'})
const payload = () =>
  Type.String({description: 'What the code holds, as text (control characters of a binary payload written as <NUL>, <SOH>...; EAN and UPC as their 13-digit GTIN).'})

export const Code = Type.Object({format: format(), payload: payload(), box: pixelBox(boxDescription)}, {...closed, description: 'A QR code or barcode read in the image.'})

export const CodeHit = Type.Object(
  {
    rule: Type.String({description: "The codes rule's name in the policy."}),
    category: Type.String({description: 'The category it feeds: a hit scores it 1.'}),
    format: format(),
    payload: payload(),
    box: pixelBox(boxDescription),
    matched: Type.Optional(Type.String({description: 'What matched: the host for a domains rule, the text found for words, regex and detect; absent for `any`.'})),
    detector: Type.Optional(Type.String({description: 'For a `detect` rule: the contact detector that found it (email, phone, url, handle).'})),
  },
  {...closed, description: 'A codes rule of the policy that a code read in the image hit.'},
)

export type Code = Static<typeof Code>
export type CodeHit = Static<typeof CodeHit>

/** What was read in one frame: its codes and the rules' hits, boxes in the image's pixels. */
export interface FrameCodes {
  codes: Code[]
  hits: CodeHit[]
  /** Reading the frame was stopped at its time limit (reader-thread.ts): codes in it may have been missed. */
  truncated?: boolean
}

const TRUNCATED =
  'Present, and true, only when reading codes was stopped at the time limit of a frame (2 s of CPU time in the reader, 10 s waiting; zxing reads a full-HD frame in well under that) or a frame held 256 codes, as many as are read: codes in that frame may have been missed.'


const imageFields = {
  codes: Type.Optional(
    Type.Array(Code, {
      description:
        'Present when the policy has codes rules: the QR codes and barcodes read (for an animation, in every frame scored), the first 32 of a frame (the rules check every code read); empty when none was.',
    }),
  ),
  code_hits: Type.Optional(
    Type.Array(CodeHit, {description: 'Present when the policy has codes rules: the rules the codes read hit; empty when none did.'}),
  ),
  codes_truncated: Type.Optional(Type.Boolean({description: TRUNCATED})),
}

const segmentFields = {
  codes: Type.Optional(
    Type.Array(Code, {
      description: "Present when the policy has codes rules: the codes read in the segment's frames, each format and payload once (with its box in the first frame it was read in).",
    }),
  ),
  code_hits: Type.Optional(
    Type.Array(CodeHit, {description: "Present when the policy has codes rules: the hits of the rules feeding this segment's category, each rule and code once."}),
  ),
  codes_truncated: Type.Optional(Type.Boolean({description: TRUNCATED})),
}

function segment(category: string): SegmentEvidence<FrameCodes> {
  const codes = new Map<string, Code>()
  const hits = new Map<string, CodeHit>()
  let read = false
  let truncated = false
  return {
    add(found) {
      read = true
      truncated ||= found.truncated === true
      for (const c of found.codes) if (!codes.has(JSON.stringify([c.format, c.payload]))) codes.set(JSON.stringify([c.format, c.payload]), c)
      for (const h of found.hits) {
        const key = JSON.stringify([h.rule, h.format, h.payload])
        if (h.category === category && !hits.has(key)) hits.set(key, h)
      }
    },
    fields: () => (read ? {codes: [...codes.values()], code_hits: [...hits.values()], ...(truncated ? {codes_truncated: true} : {})} : {}),
  }
}

/** The first hit behind a violation: ` (code rule promo: "https://evil.example/x")`. */
function hitNote(hits: readonly CodeHit[] | undefined, category: string): string {
  const h = hits?.find((x) => x.category === category)
  return h ? ` (code rule ${h.rule}: ${JSON.stringify(h.payload)})` : ''
}

export const codesEvidence: EvidenceKind<FrameCodes, typeof imageFields, typeof segmentFields> = {
  imageFields,
  segmentFields,
  image: (frames) => ({
    codes: onceEach(
      frames.flatMap((f) => f.codes),
      (a, b) => a.format === b.format && a.payload === b.payload,
    ),
    code_hits: onceEach(
      frames.flatMap((f) => f.hits),
      (a, b) => a.rule === b.rule && a.format === b.format && a.payload === b.payload,
    ),
    ...(frames.some((f) => f.truncated) ? {codes_truncated: true} : {}),
  }),
  segment,
  note: (fields, category) => hitNote(fields.code_hits, category),
  segmentNote: (fields, category) => hitNote(fields.code_hits, category),
  marks: (fields) => (fields.codes ?? []).map((c) => ({box: c.box, kind: 'mark' as const, caption: `${c.format}: ${c.payload}`})),
  notes: (fields) => (fields.code_hits ?? []).map((h) => `code rule ${h.rule} (${h.category}): ${h.format} "${h.payload}"`),
}

import {Type} from './typebox.js'

import {PRESETS} from './policy/types.js'
import {closed, Label, Origin, parentName, unit, Violation} from './schema-parts.js'
import {evidenceFields} from './signals/evidence.js'
import {SIGNALS, type ImageEvidenceFields, type SegmentEvidenceFields} from './signals/registry.js'
import {MAX_FPS, MIN_FPS} from './video/options.js'

export {Label, Origin, Violation} from './schema-parts.js'

/**
 * The engine's results, declared once as JSON Schema (TypeBox builds plain schema objects): types.ts
 * derives the TypeScript types from them, and the server validates and documents its answers with them.
 * Every object is closed (`additionalProperties: false`), so a field that is not declared here is a bug
 * the server's tests see. A new field is one more property here; the fields a signal adds (its evidence: NudeNet's
 * regions, hash-list matches, text read) come from its evidence kind, in registry order.
 */

/** The evidence kinds of the registry's signals. */
const KINDS = SIGNALS.flatMap((s) => (s.evidence ? [s.evidence] : []))
const imageEvidence = evidenceFields(KINDS, 'image') as ImageEvidenceFields
const segmentEvidence = evidenceFields(KINDS, 'segment') as SegmentEvidenceFields

const notEvaluated = () =>
  Type.Array(Type.String(), {
    description:
      'Categories of the policy that no loaded signal could score (e.g. no CLIP model installed, only the embedded ' +
      'NSFW specialist); they are not in `labels`. Empty when every category was scored.',
  })

/** What can feed a category's score. */
export const SignalName = Type.Enum(
  SIGNALS.map((s) => s.name),
  {description: SIGNALS.map((s) => `\`${s.name}\`: ${s.description}`).join('; ') + '.'},
)

/** Per signal, what the engine is doing with it (GET /health). */
export const SIGNAL_STATES = ['loaded', 'not_installed', 'off', 'not_loaded'] as const

/** Every signal of the registry with its state. */
export const SignalStates = (description: string) =>
  Type.Object(Object.fromEntries(SIGNALS.map((s) => [s.name, Type.Enum(SIGNAL_STATES)])), {...closed, description})

export const ModerationResult = Type.Object(
  {
    source: Type.String({description: 'Name of the input; for an upload, the uploaded file name.'}),
    is_safe: Type.Boolean({description: 'False when `violations` is non-empty.'}),
    violations: Type.Array(Violation),
    labels: Type.Array(Label, {description: 'Every label of the active policy that was scored, sorted by score descending.'}),
    not_evaluated: notEvaluated(),
    animation_truncated: Type.Optional(
      Type.Literal(true, {
        description:
          'An animated GIF or WebP only, when it shows more pictures than are scored (64 frames: 8 chosen by display time, then the others that differ from every frame scored): some of its pictures were not scored, and the verdict does not cover them. Absent otherwise.',
      }),
    ),
    ...imageEvidence,
  },
  closed,
)

/** The error codes that belong to one input: a batch reports them as an entry in its place and goes on. */
export const ITEM_ERROR_CODES = ['unreadable_image', 'unsupported_media', 'payload_too_large'] as const

export const ErrorEntry = Type.Object(
  {
    source: Type.String({description: 'The uploaded file name.'}),
    error: Type.Object({code: Type.Enum(ITEM_ERROR_CODES), message: Type.String()}, closed),
  },
  {...closed, description: 'Stands in a batch for a file that could not be read.'},
)

export const BatchResult = Type.Object(
  {results: Type.Array(Type.Union([ModerationResult, ErrorEntry]), {description: 'One entry per file, in upload order.'})},
  closed,
)

/** Whether a category is scored in this setup, by what, and if not why: what a verdict covers. */
const stateFields = {
  evaluated: Type.Boolean({
    description: 'Whether results score it. A category that is not evaluated is never a violation: `is_safe` does not cover it.',
  }),
  evaluated_by: Type.Array(SignalName, {description: 'The signals that score it in this setup; empty when it is not evaluated.'}),
  reason: Type.Optional(
    Type.String({
      description: 'Only when it is not evaluated: why, and what adds it (e.g. "needs the CLIP model: not installed, run `mod models pull fast`").',
    }),
  ),
}

export const CategoryState = Type.Object(
  {name: Type.String(), ...stateFields},
  {...closed, description: 'Whether one category is evaluated, by which signals, or why not.'},
)

export const Coverage = Type.Object(
  {
    evaluated: Type.Integer({minimum: 0, description: "Categories of the policy that results score."}),
    total: Type.Integer({minimum: 0, description: "Categories of the policy."}),
    not_evaluated: Type.Array(Type.String(), {description: 'The categories of the policy that results do not score (their `not_evaluated`).'}),
    text_only: Type.Optional(
      Type.Array(Type.String(), {
        description:
          "Present when some are: categories evaluated by the policy's text rules alone (counted in `evaluated`). No image is examined for them, only the text read in it.",
      }),
    ),
  },
  {...closed, description: 'How much of the policy a verdict covers.'},
)

export const CategoryListing = Type.Object(
  {
    name: Type.String(),
    parent: parentName(),
    threshold: unit(),
    origin: Origin,
    signals: Type.Array(SignalName, {
      description:
        'What the policy feeds the score with (installed or not). Model signals (clip, nsfw) combine as a weighted mean; ' +
        'a head blends in afterwards.',
    }),
    ...stateFields,
    prompts: Type.Optional(Type.Array(Type.String(), {description: 'Absent for head labels.'})),
    negatives: Type.Optional(Type.Array(Type.String(), {description: 'Benign look-alikes; absent for head labels.'})),
  },
  closed,
)

export const CategoriesResult = Type.Object(
  {
    preset: Type.Enum(PRESETS),
    model: Type.String({description: 'Id of the model in use.'}),
    coverage: Coverage,
    categories: Type.Array(CategoryListing),
  },
  closed,
)

export const Segment = Type.Object(
  {
    start: Type.Number({minimum: 0, description: "Seconds: the first frame's timestamp, on the file's timeline as players show it."}),
    end: Type.Number({minimum: 0, description: "Seconds: the last frame's timestamp plus 1/fps, capped at the duration."}),
    frames: Type.Integer({minimum: 1}),
    max_confidence: unit(),
    ...segmentEvidence,
  },
  {...closed, description: 'A run of consecutive sampled frames whose score stayed at or above the threshold.'},
)

export const VideoViolation = Type.Object(
  {
    name: Type.String(),
    parent: parentName(),
    threshold: unit(),
    max_confidence: unit(),
    segments: Type.Array(Segment, {minItems: 1}),
  },
  closed,
)

export const VideoResult = Type.Object(
  {
    source: Type.String({description: 'The uploaded file name.'}),
    is_safe: Type.Boolean(),
    duration: Type.Number({minimum: 0, description: "Seconds: where the video ends on the file's timeline, from the packets read (its length, for a file that starts at 0 as most do); when stopped_early, where the frames analysed end."}),
    fps: Type.Number({minimum: MIN_FPS, maximum: MAX_FPS}),
    frames_analyzed: Type.Integer({minimum: 0, description: 'Sampling instants scored; each scores the frame of every video stream of the file at that instant.'}),
    stopped_early: Type.Boolean({description: 'stop_on_violation ended the analysis at the first segment of min_frames frames.'}),
    violations: Type.Array(VideoViolation),
    not_evaluated: notEvaluated(),
  },
  closed,
)

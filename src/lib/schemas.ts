import {Type} from 'typebox'

import {PRESETS} from './policy/types.js'
import {SIGNALS} from './signals/registry.js'
import {MAX_FPS, MIN_FPS} from './video/options.js'

/**
 * The engine's results, declared once as JSON Schema (TypeBox builds plain schema objects): types.ts
 * derives the TypeScript types from them, and the server validates and documents its answers with them.
 * Every object is closed (`additionalProperties: false`), so a field that is not declared here is a bug
 * the server's tests see. A new field is one more property here.
 */

const closed = {additionalProperties: false} as const

const unit = (description?: string) => Type.Number({minimum: 0, maximum: 1, ...(description ? {description} : {})})

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

const parentName = () =>
  Type.Union([Type.String(), Type.Null()], {description: 'Name of the parent category; null when there is none.'})

export const Origin = Type.Enum(['builtin', 'custom', 'head'], {
  description: '`builtin`: a default category; `custom`: added by the policy file; `head`: a trained head label.',
})

export const Label = Type.Object(
  {
    name: Type.String(),
    score: unit('Calibrated score, rounded to 4 decimals.'),
    threshold: unit(),
    parent: parentName(),
    violated: Type.Boolean({description: 'score >= threshold.'}),
    origin: Origin,
  },
  {...closed, description: 'The score of one label of the active policy.'},
)

export const Violation = Type.Object(
  {
    name: Type.String(),
    confidence: unit('The calibrated score.'),
    parent: parentName(),
    threshold: unit(),
  },
  {...closed, description: 'A label whose score reached its threshold. A violated child does not add its parent.'},
)

/** [x, y, width, height]: a box in whole pixels. */
const pixelBox = (description: string) => Type.Array(Type.Integer({minimum: 0}), {minItems: 4, maxItems: 4, description})

export const Region = Type.Object(
  {
    label: Type.String({description: 'What NudeNet found there, e.g. FEMALE_BREAST_EXPOSED, BUTTOCKS_COVERED, BELLY_EXPOSED.'}),
    score: Type.Number({minimum: 0, maximum: 1, description: "The detector's confidence."}),
    box: pixelBox('[x, y, width, height] in pixels of the image as uploaded (after EXIF rotation), any border trim undone.'),
  },
  {...closed, description: 'A body part found by the NudeNet detector.'},
)

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

const textBoxDescription = "[x, y, width, height] in pixels of the image as uploaded (after EXIF rotation), any border trim undone: the upright rectangle around the line."

export const TextLine = Type.Object(
  {
    text: Type.String({description: 'The line as read.'}),
    confidence: Type.Number({minimum: 0, maximum: 1, description: "The reader's mean confidence over the line's characters."}),
    box: pixelBox(textBoxDescription),
  },
  {...closed, description: 'A line of text read in the image.'},
)

export const TextHit = Type.Object(
  {
    rule: Type.String({description: "The text rule's name in the policy."}),
    category: Type.String({description: 'The category it feeds: a hit scores it 1.'}),
    text: Type.String({description: 'The text matched, as read (Unicode NFKC); a phrase over several lines of one block of text gives their parts joined by a space.'}),
    box: pixelBox(textBoxDescription.replace('the line', 'the line it was read in (around its lines, for a phrase over several)')),
    detector: Type.Optional(Type.String({description: 'For a `detect` rule: the contact detector that found it (email, phone, url, handle).'})),
  },
  {...closed, description: 'A text rule of the policy that matched a line read in the image.'},
)

export const ModerationResult = Type.Object(
  {
    source: Type.String({description: 'Name of the input; for an upload, the uploaded file name.'}),
    is_safe: Type.Boolean({description: 'False when `violations` is non-empty.'}),
    violations: Type.Array(Violation),
    labels: Type.Array(Label, {description: 'Every label of the active policy that was scored, sorted by score descending.'}),
    not_evaluated: notEvaluated(),
    regions: Type.Optional(
      Type.Array(Region, {
        description:
          'Present only where the NudeNet detector is installed (`mod models pull nudenet`): the intimate body parts (exposed or covered) and bare bellies it found, best first; for an animation, those of every frame scored. Faces and feet are not listed. Empty when it found none.',
      }),
    ),
    matches: Type.Optional(
      Type.Array(HashListMatch, {
        description:
          "Present when the image matched a hash list of the policy: per list, its nearest entry (over an animation's frames), nearest first.",
      }),
    ),
    text: Type.Optional(
      Type.Array(TextLine, {
        description:
          "Present when the policy has text rules: the lines of text read (for an animation, in every frame scored), in reading order; empty when none was read.",
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
          'Present when the policy has text rules: true when reading stopped early and lines of the image were left unread. An image reads at most 64 lines and 12 800 recogniser columns (the lines\' widths at 48 px high), the first in reading order, and an animation at most 3 of its frames scored, sharing that budget.',
      }),
    ),
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
    start: Type.Number({minimum: 0, description: "Seconds: the first frame's timestamp."}),
    end: Type.Number({minimum: 0, description: "Seconds: the last frame's timestamp plus 1/fps, capped at the duration."}),
    frames: Type.Integer({minimum: 1}),
    max_confidence: unit(),
    matches: Type.Optional(
      Type.Array(SegmentMatch, {
        description: "Present when frames of the segment matched the policy's hash lists: each listed entry once, nearest first.",
      }),
    ),
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
          "Present when the policy reads the text of videos: true when reading stopped early in some of the segment's frames (each frame reads at most 64 lines and 12 800 recogniser columns, as an image does).",
      }),
    ),
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
    duration: Type.Number({minimum: 0, description: 'Seconds.'}),
    fps: Type.Number({minimum: MIN_FPS, maximum: MAX_FPS}),
    frames_analyzed: Type.Integer({minimum: 0}),
    stopped_early: Type.Boolean(),
    violations: Type.Array(VideoViolation),
    not_evaluated: notEvaluated(),
  },
  closed,
)

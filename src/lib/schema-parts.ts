/**
 * The pieces of the result schemas that the signals' own evidence schemas use too: closed objects, scores in
 * [0, 1], boxes in pixels, labels. Nothing here knows the signal registry, so a signal folder can import it
 * without an import cycle; schemas.ts assembles the results from these and from each signal's evidence.
 */
import {Type} from './typebox.js'

/** Every object of a result is closed: a field that is not declared is a bug the server's tests see. */
export const closed = {additionalProperties: false} as const

export const unit = (description?: string) => Type.Number({minimum: 0, maximum: 1, ...(description ? {description} : {})})

/** [x, y, width, height]: a box in whole pixels. */
export const pixelBox = (description: string) => Type.Array(Type.Integer({minimum: 0}), {minItems: 4, maxItems: 4, description})

export const parentName = () =>
  Type.Union([Type.String(), Type.Null()], {description: 'Name of the parent category; null when there is none.'})

/** Where a label comes from. */
export const ORIGINS = ['builtin', 'custom', 'head'] as const
export type Origin = (typeof ORIGINS)[number]

export const Origin = Type.Enum(ORIGINS, {
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

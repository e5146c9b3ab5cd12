/** Shapes shared by the engine's modules and its adapters; the results are declared in schemas.ts. */

import type {Static} from './typebox.js'

import type * as S from './schemas.js'

export type Origin = Static<typeof S.Origin>
export type Label = Static<typeof S.Label>
export type Violation = Static<typeof S.Violation>
export type ModerationResult = Static<typeof S.ModerationResult>
export type ItemErrorCode = (typeof S.ITEM_ERROR_CODES)[number]
export type ErrorEntry = Static<typeof S.ErrorEntry>
export type BatchResult = Static<typeof S.BatchResult>
export type CategoryListing = Static<typeof S.CategoryListing>
export type CategoryState = Static<typeof S.CategoryState>
export type Coverage = Static<typeof S.Coverage>
export type CategoriesResult = Static<typeof S.CategoriesResult>
export type Segment = Static<typeof S.Segment>
export type VideoViolation = Static<typeof S.VideoViolation>
export type VideoResult = Static<typeof S.VideoResult>

export type {RgbImage} from './image/rgb.js'

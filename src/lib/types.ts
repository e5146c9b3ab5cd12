/** Shapes shared by the engine's modules and its adapters; the results are declared in schemas.ts. */

import type {Static} from 'typebox'

import type * as S from './schemas.js'

export type Origin = Static<typeof S.Origin>
export type Label = Static<typeof S.Label>
export type Violation = Static<typeof S.Violation>
export type ModerationResult = Static<typeof S.ModerationResult>
export type Region = Static<typeof S.Region>
export type ItemErrorCode = (typeof S.ITEM_ERROR_CODES)[number]
export type ErrorEntry = Static<typeof S.ErrorEntry>
export type BatchResult = Static<typeof S.BatchResult>
export type CategoryListing = Static<typeof S.CategoryListing>
export type CategoryState = Static<typeof S.CategoryState>
export type Coverage = Static<typeof S.Coverage>
export type CategoriesResult = Static<typeof S.CategoriesResult>
export type Segment = Static<typeof S.Segment>
export type SegmentMatch = Static<typeof S.SegmentMatch>
export type VideoViolation = Static<typeof S.VideoViolation>
export type VideoResult = Static<typeof S.VideoResult>
export type HashListMatch = Static<typeof S.HashListMatch>
export type TextLine = Static<typeof S.TextLine>
export type TextHit = Static<typeof S.TextHit>

/** Decoded pixels: interleaved RGB (3 channels, no alpha), row-major. */
export interface RgbImage {
  data: Buffer
  width: number
  height: number
  /** The file's pixels per pixel here, for an image decoded scaled down (see planDecode); absent: 1. */
  scale?: number
}

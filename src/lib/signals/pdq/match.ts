import {DIHEDRAL, type Dihedral} from './dct.js'
import {hashToHex, type Hash256} from './hash256.js'
import type {ListMatch, LoadedList} from './list-load.js'
import type {PdqDihedral} from './pdq.js'

/** Usual PDQ match threshold: at most 31 of the 256 bits differ. */
export const DEFAULT_DISTANCE_THRESHOLD = 31

/**
 * Below this quality (0-100) an image has too little detail for its hash to mean anything (flat colours,
 * near-blank frames): it is not matched at all. 50 is the floor Meta's tools commonly apply.
 */
export const DEFAULT_QUALITY_FLOOR = 50

export interface HashMatch {
  list: string
  label: string
  note: string
  /** Hamming distance between the image's hash (or the variant named) and the listed one. */
  distance: number
  /** 1 - distance / 64: 1 for the same hash, 0.52 at distance 31; unrelated images (about 128 apart) would be 0. */
  confidence: number
  /** The listed hash, in hex. */
  hash: string
  /**
   * Which rotation or mirror of the image matched ('original' without them), 'stored': its stored pixels, before
   * EXIF orientation, or `trimmed …`: a rotation or mirror of the frame without the borders trimming cut.
   */
  variant: Variant
}

export type Variant = Dihedral | 'stored' | `trimmed ${Dihedral}`


export function confidenceOf(distance: number): number {
  return Math.max(0, 1 - distance / 64)
}

export interface MatchOptions {
  /** Per list name; DEFAULT_DISTANCE_THRESHOLD when absent. */
  thresholds?: Record<string, number>
  qualityFloor?: number
}

/**
 * Every entry of `lists` within its list's threshold of the image's hash, or of any of its rotations and
 * mirrors when they are given, or of its stored pixels' hash when given, or of the trimmed frame's rotations and
 * mirrors when given; each listed hash is reported once, for the nearest variant. A hash whose image's quality
 * is below the floor matches nothing.
 */
export async function matchHash(
  lists: LoadedList[],
  image: {hash: Hash256; quality: number; dihedral?: PdqDihedral; stored?: Hash256; trimmed?: {dihedral: PdqDihedral; quality: number}},
  options: MatchOptions = {},
): Promise<HashMatch[]> {
  const floor = options.qualityFloor ?? DEFAULT_QUALITY_FLOOR
  const variants: [Variant, Hash256][] = []
  if (image.quality >= floor) {
    variants.push(...(image.dihedral ? DIHEDRAL.map((d): [Variant, Hash256] => [d, (image.dihedral as PdqDihedral)[d]]) : [['original', image.hash] as [Variant, Hash256]]))
    if (image.stored) variants.push(['stored', image.stored])
  }
  const trimmed = image.trimmed
  if (trimmed && trimmed.quality >= floor) variants.push(...DIHEDRAL.map((d): [Variant, Hash256] => [`trimmed ${d}`, trimmed.dihedral[d]]))
  if (variants.length === 0) return []
  const matches: HashMatch[] = []
  for (const loaded of lists) {
    const threshold = options.thresholds?.[loaded.name] ?? DEFAULT_DISTANCE_THRESHOLD
    // Every variant in one search: a mapped list answers them all in one pass over its files.
    const found = await loaded.search(
      variants.map(([, hash]) => hash),
      threshold,
    )
    const best = new Map<number, {hit: ListMatch; variant: Variant}>()
    found.forEach((hits, k) => {
      for (const hit of hits) {
        const seen = best.get(hit.id)
        if (!seen || hit.distance < seen.hit.distance) best.set(hit.id, {hit, variant: variants[k][0]})
      }
    })
    for (const {hit, variant} of best.values()) {
      const {label, note, distance} = hit
      matches.push({list: loaded.name, label, note, distance, confidence: confidenceOf(distance), hash: hashToHex(hit.hash), variant})
    }
  }
  return matches.sort((a, b) => a.distance - b.distance || a.list.localeCompare(b.list) || a.hash.localeCompare(b.hash))
}

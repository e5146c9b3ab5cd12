/**
 * The hash-list signal: each frame's PDQ hash (and its seven rotations and mirrors) looked up in the policy's
 * lists of known-bad images. It runs only when the policy names a list. A match counts in its list's category
 * with the match's confidence (1 - distance / 64): the category's score is at least that, whatever the other
 * signals say, and a category no match touches keeps their score (or 0 for one only lists score, `known_bad`).
 * It hashes the frame as decoded, before border trimming, so that its hashes are those `mod hash` prints; for a
 * photo with an EXIF orientation it also hashes the stored pixels, unturned, as lists made with Meta's tools do;
 * and where trimming cut something (a border, a letterbox, a canvas), it hashes the trimmed frame too: a border
 * added to a listed picture moves every hash of the whole frame out of reach.
 */
import {applyHits, ruleCategories} from '../rule-hits.js'
import {policyWeight, type OpenSignal, type Signal, type SignalSetup} from '../signal.js'
import {hashListEvidence, type HashListMatch} from './evidence.js'
import {loadHashList} from './list-load.js'
import {matchHash, type HashMatch} from './match.js'
import {pdqDihedralHashes, pdqStoredHash} from './pdq.js'
import {hashListsOf, hashListsSection} from './policy-section.js'

/** A frame's matches, nearest first, each with the category its list counts in. */
type FrameMatches = (HashMatch & {category: string})[]

async function open(setup: SignalSetup, opened: ReadonlyMap<string, OpenSignal>): Promise<OpenSignal<FrameMatches, FrameMatches>> {
  const {policy} = setup
  // Lists load once (a large one, or one marked shared, mapped from its cache under the cache folder); a missing
  // file or bad line stops start-up.
  const named = hashListsOf(policy)
  const lists = await Promise.all(named.map((l) => loadHashList(l.file, l.name, {cacheDir: setup.cacheDir, shared: l.shared})))
  const thresholds = Object.fromEntries(named.map((l) => [l.name, l.distance]))
  const categoryOf = new Map(named.map((l) => [l.name, l.category]))
  const fed = ruleCategories(policy, new Set(categoryOf.values()), opened)

  return {
    prepare: async (frame, _origin, decoded) => {
      const {hashes, quality} = pdqDihedralHashes(decoded)
      // Only a photo decoded with an EXIF orientation has a second hash: that of its stored pixels.
      const stored = pdqStoredHash(decoded)?.hash
      const cut = frame.width !== decoded.width || frame.height !== decoded.height
      const trimmed = cut ? pdqDihedralHashes(frame) : undefined
      const matches = await matchHash(
        lists,
        {hash: hashes.original, quality, dihedral: hashes, stored, trimmed: trimmed && {dihedral: trimmed.hashes, quality: trimmed.quality}},
        {thresholds},
      )
      return matches.map((m) => ({...m, category: categoryOf.get(m.list) as string}))
    },
    infer: async (frames) => frames,
    adjust: (labels, outputs) => {
      // A match scores its category at least its confidence, the nearest of the frame's matches counting.
      const best = new Map<string, number>()
      for (const m of (outputs.get('pdq') as FrameMatches | undefined) ?? []) best.set(m.category, Math.max(best.get(m.category) ?? 0, m.confidence))
      return applyHits(labels, best, fed)
    },
    evidence: (matches) => matches.map((m): HashListMatch => ({list: m.list, label: m.label, note: m.note, distance: m.distance, category: m.category})),
    dispose: async () => {
      await Promise.all(lists.map((l) => l.close()))
    },
  }
}

export const pdqSignal = {
  name: 'pdq',
  title: 'the hash-list matcher',
  description: "PDQ hashes matched against the policy's hash lists",
  kind: 'model',
  combine: {mode: 'max'},
  off: (setup) => (hashListsOf(setup.policy).length === 0 ? 'the policy names no hash list' : undefined),
  weight: policyWeight('pdq'),
  policy: hashListsSection,
  evidence: hashListEvidence,
  open,
} satisfies Signal

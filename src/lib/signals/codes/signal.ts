/**
 * The codes signal: the QR codes and barcodes in each frame, read offline by zxing-cpp compiled to WebAssembly
 * (read.ts; the module comes from the installed package, never from the network), matched against the policy's
 * codes rules (rules.ts). It runs only when the policy has codes rules. A rule's hit is a violation of its
 * category: the category's score is 1 on that frame, whatever the other signals say; a frame without hits leaves
 * their score as it is (0 for `contact_info` when only codes or text rules feed it). Boxes come out in the pixels
 * of the image as uploaded. Codes are read on the whole decoded frame, whatever the policy's `trim_borders`, in a
 * worker thread with a time limit per frame (reader-thread.ts): a frame cut short, or with as many codes as the
 * reader reads, says so (`codes_truncated`).
 */
import {applyHits, ruleCategories} from '../rule-hits.js'
import {toImageBox, type OpenSignal, type Signal, type SignalSetup} from '../signal.js'
import {codesEvidence, type FrameCodes} from './evidence.js'
import {codesPolicyOf, codesSection} from './policy-section.js'
import {DEFAULT_MAX_CODES, type CodeReaderOptions, type FoundCode} from './read.js'
import {openThreadedCodeReader} from './reader-thread.js'
import {applyCodesRules, compileCodesRules} from './rules.js'

/**
 * How the signal reads: light-on-dark codes too, since phones' cameras open them and a deny list that skipped them
 * would be passed by inverting a code (it costs about half as much reading time again: bench/codes.ts).
 */
export const CODES_READER_OPTIONS = {inverted: true} as const satisfies CodeReaderOptions

/** Codes a frame's result lists; the rules see every code read, and a hit always names its code. */
export const LISTED_CODES = 32

async function open(setup: SignalSetup, opened: ReadonlyMap<string, OpenSignal>): Promise<OpenSignal<FrameCodes, FrameCodes>> {
  const {policy} = setup
  const section = codesPolicyOf(policy)
  if (section === undefined) throw new Error('the codes signal opened without codes rules')
  const rules = compileCodesRules(section)
  const reader = openThreadedCodeReader(CODES_READER_OPTIONS)
  const fed = ruleCategories(policy, new Set(section.rules.map((r) => r.category)), opened)

  return {
    // Read while the frame is prepared, beside the other signals' preprocessing: there is no model run to batch.
    // Read on the frame as decoded, before border trimming and the aspect bound: a uniform border is a code's
    // quiet zone, which a reader needs, so a trim cuts codes near the edges of the image.
    async prepare(_frame, origin, decoded) {
      const whole = {...origin, left: 0, top: 0}
      const read = await reader.read(decoded)
      const codes = read.codes.map((c): FoundCode => ({...c, box: toImageBox(c.box, whole)}))
      // A frame with as many codes as the reader reads may hold more, unread.
      const truncated = read.timedOut || codes.length >= DEFAULT_MAX_CODES
      return {codes: codes.slice(0, LISTED_CODES), hits: applyCodesRules(rules, codes).map((h) => ({...h})), ...(truncated ? {truncated: true} : {})}
    },
    infer: async (frames) => frames,
    adjust: (labels, outputs) => {
      const output = outputs.get('codes') as FrameCodes | undefined
      return applyHits(labels, new Map(output?.hits.map((h) => [h.category, 1])), fed)
    },
    evidence: (output) => output,
    dispose: () => reader.close(),
  }
}

export const codesSignal = {
  name: 'codes',
  title: 'the code reader',
  description: "QR codes and barcodes read in images (zxing-cpp), matched against the policy's codes rules",
  kind: 'model',
  combine: {mode: 'max'},
  off: (setup) => (codesPolicyOf(setup.policy) === undefined ? 'the policy has no codes rules' : undefined),
  weight: (category) => category.signals.codes ?? 0,
  policy: codesSection,
  evidence: codesEvidence,
  open,
} satisfies Signal

/**
 * The codes signal: the QR codes and barcodes in each frame, read offline by zxing-cpp compiled to WebAssembly
 * (read.ts; the module comes from the installed package, never from the network), matched against the policy's
 * codes rules (rules.ts). It runs only when the policy has codes rules. A rule's hit is a violation of its
 * category: the category's score is 1 on that frame, whatever the other signals say; a frame without hits leaves
 * their score as it is (0 for `contact_info` when only codes or text rules feed it). Boxes come out in the pixels
 * of the image as uploaded.
 */
import type {Category} from '../../policy/types.js'
import type {ScoredLabel} from '../../scoring/result.js'
import {toImageBox, type OpenSignal, type Signal, type SignalSetup} from '../signal.js'
import {codesEvidence, type FrameCodes} from './evidence.js'
import {codesPolicyOf, codesSection} from './policy-section.js'
import {openCodeReader, type FoundCode} from './read.js'
import {applyCodesRules, compileCodesRules} from './rules.js'

async function open(setup: SignalSetup, opened: ReadonlyMap<string, OpenSignal>): Promise<OpenSignal<FrameCodes, FrameCodes>> {
  const {policy} = setup
  const section = codesPolicyOf(policy)
  if (section === undefined) throw new Error('the codes signal opened without codes rules')
  const rules = compileCodesRules(section)
  const reader = await openCodeReader()
  const fed = new Set(section.rules.map((r) => r.category))
  const categories = policy.categories.filter((c) => fed.has(c.name))
  // The categories no signal opened before it scores (contact_info, any under --only codes): 0 on a frame without hits.
  const only = categories.filter((c) => ![...opened.keys()].some((name) => (c.signals[name] ?? 0) > 0))

  function adjust(labels: ScoredLabel[], output: FrameCodes | undefined): ScoredLabel[] {
    const hit = new Set(output?.hits.map((h) => h.category))
    const out = labels.map((l) => (hit.has(l.name) ? {...l, score: 1} : l))
    const add = (c: Category, score: number) => out.push({name: c.name, score, threshold: c.threshold, parent: c.parent, origin: c.origin})
    for (const c of categories) {
      if (out.some((l) => l.name === c.name)) continue
      if (hit.has(c.name)) add(c, 1)
      else if (only.includes(c)) add(c, 0)
    }
    return out
  }

  return {
    // Read while the frame is prepared, beside the other signals' preprocessing: there is no model run to batch.
    prepare(frame, origin) {
      const codes = reader.read(frame).map((c): FoundCode => ({...c, box: toImageBox(c.box, origin)}))
      return {codes, hits: applyCodesRules(rules, codes).map((h) => ({...h}))}
    },
    infer: async (frames) => frames,
    adjust: (labels, outputs) => adjust(labels, outputs.get('codes') as FrameCodes | undefined),
    evidence: (output) => output,
    dispose: () => reader.close(),
  }
}

export const codesSignal = {
  name: 'codes',
  title: 'the code reader',
  description: "QR codes and barcodes read in images (zxing-cpp), matched against the policy's codes rules",
  kind: 'model',
  off: (setup) => (codesPolicyOf(setup.policy) === undefined ? 'the policy has no codes rules' : undefined),
  weight: (category) => category.signals.codes ?? 0,
  policy: codesSection,
  evidence: codesEvidence,
  open,
} satisfies Signal

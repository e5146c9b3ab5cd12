/**
 * A trained head (--head / MOD_HEAD): labels scored from the CLIP embedding (head.ts), blended into the
 * policy's categories of the same name or added beside them, after the categories are combined.
 */
import {l2Normalised} from '../../scoring/vector.js'
import type {OpenClip} from '../clip/signal.js'
import type {ExtraLabel, OpenSignal, Signal, SignalSetup} from '../signal.js'
import {applyHead, checkHeadFits, checkHeadParents, headLogit, loadHead, type Head} from './head.js'

function extraLabels(head: Head, setup: SignalSetup): ExtraLabel[] {
  const names = new Set(setup.policy.categories.map((c) => c.name))
  return head.labels
    .filter((l) => !names.has(l.name))
    .map((l) => ({name: l.name, parent: l.parent, threshold: l.threshold, origin: 'head' as const}))
}

async function open(setup: SignalSetup, opened: ReadonlyMap<string, OpenSignal>): Promise<OpenSignal> {
  const head = await loadHead(setup.headPath as string)
  const clip = opened.get('clip') as OpenClip
  checkHeadFits(head, clip.manifest.id, clip.manifest.embedding_size)
  checkHeadParents(head, setup.policy)
  const added = extraLabels(head, setup)
  const addedNames = new Set(added.map((l) => l.name))
  return {
    extraLabels: added,
    adjust(labels, outputs) {
      const embedding = outputs.get('clip') as Float32Array | undefined
      return embedding ? applyHead(head, embedding, labels) : labels
    },
    extraRaw(outputs) {
      const x = l2Normalised(outputs.get('clip') as Float32Array)
      return new Map(head.labels.filter((l) => addedNames.has(l.name)).map((l) => [l.name, headLogit(l, x)]))
    },
    dispose: async () => {},
  }
}

export const headSignal: Signal = {
  name: 'head',
  title: 'the trained head',
  description: 'a trained head',
  kind: 'labels',
  // Blends its scores into the family as the detector left it.
  combine: {mode: 'revise', after: ['nudenet']},
  needs: ['clip'],
  off: (setup) => (setup.headPath === undefined ? 'no head file is set' : undefined),
  weight: () => 0,
  open,
  async labelNames(setup) {
    const head = await loadHead(setup.headPath as string)
    return head.labels.map((l) => ({name: l.name, parent: l.parent, threshold: l.threshold, origin: 'head' as const}))
  },
}

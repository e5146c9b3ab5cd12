/**
 * The embedded NSFW specialist: five class probabilities per view of a frame (the first view alone, or all four
 * where the first scores high enough to look again: runner.ts), turned into the scores of the sexual-content
 * categories by rule.ts. It runs when the policy
 * leaves it on and the setup has one to open.
 */
import {disposer} from '../../dispose.js'
import {lazy} from '../../lazy.js'
import {policyWeight, type OpenSignal, type Signal, type SignalSetup} from '../signal.js'
import {nsfwCategoryScores} from './rule.js'
import {classifyViews, type NsfwRunner, type NsfwViews} from './runner.js'

async function open(setup: SignalSetup): Promise<OpenSignal<NsfwViews, Float32Array>> {
  const runner = lazy(setup.openNsfw as () => Promise<NsfwRunner>)
  return {
    // Five probabilities per view looked at: features cached as one mirror-averaged five must not be read as these.
    key: 'nsfw-views',
    warm: async () => void (await runner.get()),
    prepare: async (frame) => (await runner.get()).views(frame),
    infer: async (views) => classifyViews(await runner.get(), views),
    scores: (probabilities) => new Map(Object.entries(nsfwCategoryScores(probabilities))),
    encode: (probabilities) => probabilities,
    decode: (features) => features,
    dispose: disposer(async () => {
      const pending = runner.current()
      runner.reset()
      await (await pending?.catch(() => undefined))?.close()
    }).dispose,
  }
}

export const nsfwSignal: Signal = {
  name: 'nsfw',
  title: 'the NSFW specialist',
  description: 'the embedded NSFW specialist',
  kind: 'model',
  policySwitch: 'on',
  off: (setup) => (setup.openNsfw === undefined ? 'none is installed with this setup' : undefined),
  weight: policyWeight('nsfw'),
  open,
}

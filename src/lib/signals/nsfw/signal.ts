/**
 * The embedded NSFW specialist: five class probabilities per view of a frame (the first view alone, or all four
 * where the first scores high enough to look again: runner.ts), turned into the scores of the sexual-content
 * categories by rule.ts. It runs when the policy
 * leaves it on and the setup has one to open.
 */
import {disposer} from '../../dispose.js'
import {NSFW_SIZE} from '../../model/nsfw-manifest.js'
import {lazy} from '../../lazy.js'
import {policyWeight, type OpenSignal, type Signal, type SignalSetup} from '../signal.js'
import {nsfwCategoryScores} from './rule.js'
import {classifyViews, openNsfwRunner, type NsfwRunner, type NsfwViews} from './runner.js'

/** How the specialist's runner is opened from the setup: the embedded model, unless a test gives a stand-in. */
export type NsfwOpener = (setup: SignalSetup) => Promise<NsfwRunner>

async function open(openRunner: NsfwOpener, setup: SignalSetup): Promise<OpenSignal<NsfwViews, Float32Array>> {
  const runner = lazy(() => openRunner(setup))
  return {
    // Five probabilities per view looked at: features cached as one mirror-averaged five must not be read as these.
    key: 'nsfw-views',
    frameSide: NSFW_SIZE,
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

/** The specialist opened with `openRunner`. */
export function nsfwSignalWith(openRunner: NsfwOpener): Signal {
  return {
    name: 'nsfw',
    title: 'the NSFW specialist',
    description: 'the embedded NSFW specialist',
    kind: 'model',
    policySwitch: 'on',
    weight: policyWeight('nsfw'),
    open: (setup) => open(openRunner, setup),
  }
}

export const nsfwSignal: Signal = nsfwSignalWith((setup) => openNsfwRunner({threads: setup.threads, cacheDir: setup.cacheDir}))

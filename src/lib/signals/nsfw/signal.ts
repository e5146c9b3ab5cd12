/**
 * The embedded NSFW specialist: a cascade of two classifiers (runner.ts), five class probabilities per view of a
 * frame (the small model's one view, and the large model's three where the small one sees anything), turned into
 * the scores of the sexual-content categories by rule.ts. It runs when the policy
 * leaves it on and the setup has one to open.
 */
import {disposer} from '../../dispose.js'
import {frameInBars, frameToScore} from '../../image/prepare.js'
import {lazy} from '../../lazy.js'
import {policyWeight, type OpenSignal, type Signal, type SignalSetup} from '../signal.js'
import {nsfwCategoryScores} from './rule.js'
import {CANONICAL_SIDE, classifyViews, openNsfwRunner, type NsfwRunner, type NsfwViews} from './runner.js'

/** How the specialist's runner is opened from the setup: the embedded model, unless a test gives a stand-in. */
export type NsfwOpener = (setup: SignalSetup) => Promise<NsfwRunner>

async function open(openRunner: NsfwOpener, setup: SignalSetup): Promise<OpenSignal<NsfwViews, Float32Array>> {
  const runner = lazy(() => openRunner(setup))
  return {
    // The gate's five probabilities, then the judge's for each of its views, then those of a quarter turn judged too:
    // features cached by the earlier single-model specialist (its four views), before bars were cut, or before turns
    // were judged, must not be read as these.
    key: 'nsfw-cascade-turns',
    frameSide: CANONICAL_SIDE,
    // A server opens the judge too (`eager`), so that no request waits for it; a scan opens it on first need.
    warm: async () => {
      const r = await runner.get()
      if (setup.eager) await r.openJudge?.()
    },
    // The frame as decoded, a plain background kept: both models were trained on whole web images squeezed to a
    // square, and a catalogue photo trimmed of its white background to a narrow strip, then squeezed, is unlike
    // them (and scored less steadily across upload sizes: docs/models.md, "Rules"). Bars that end at a sharp edge
    // are cut (when the policy trims borders): a photo in the middle of a canvas scored the canvas. Only a sliver
    // is cut to its centre.
    prepare: async (_frame, _origin, decoded) => (await runner.get()).views(setup.policy.trim_borders ? frameInBars(decoded) : frameToScore(decoded, false)),
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
    combine: {mode: 'mean'},
    policySwitch: 'on',
    weight: policyWeight('nsfw'),
    open: (setup) => open(openRunner, setup),
  }
}

export const nsfwSignal: Signal = nsfwSignalWith((setup) => openNsfwRunner({threads: setup.threads, cacheDir: setup.cacheDir}))

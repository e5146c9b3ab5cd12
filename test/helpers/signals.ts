/**
 * The registry as tests see it: signal lists and per-signal states derived from it (so that adding a signal
 * breaks no test that is not about it), and the registry with a signal's model swapped for a stand-in.
 */
import type {SignalState} from '../../src/lib/engine.js'
import type {NsfwClassifier, NsfwRunner} from '../../src/lib/signals/nsfw/runner.js'
import {nsfwSignal, nsfwSignalWith, type NsfwOpener} from '../../src/lib/signals/nsfw/signal.js'
import {nudenetSignalWith, type NudenetOpener} from '../../src/lib/signals/nudenet/signal.js'
import {SIGNALS} from '../../src/lib/signals/registry.js'
import type {Signal} from '../../src/lib/signals/signal.js'

/** Every signal of the registry with `state`, except those named in `states` (which may add a test's own signals). */
export function signalStates(states: Partial<Record<string, SignalState>>, state: SignalState = 'off'): Record<string, SignalState> {
  return {...Object.fromEntries(SIGNALS.map((s) => [s.name, state])), ...states} as Record<string, SignalState>
}

/** `registry` with each signal of `replacements` in place of the one of its name. */
export function withSignals(replacements: readonly Signal[], registry: readonly Signal[] = SIGNALS): Signal[] {
  return registry.map((s) => replacements.find((r) => r.name === s.name) ?? s)
}

/** `registry` without the signals named. */
export function withoutSignals(names: readonly string[], registry: readonly Signal[] = SIGNALS): Signal[] {
  return registry.filter((s) => !names.includes(s.name))
}

/** `registry` with the NSFW specialist opened by `open` (a stand-in runner). */
export function withNsfw(open: NsfwOpener, registry: readonly Signal[] = SIGNALS): Signal[] {
  return withSignals([nsfwSignalWith(open)], registry)
}

/** `registry` with the NudeNet detector opened by `open`, listed from the folder `installedIn` (none: not installed). */
export function withNudenet(open: NudenetOpener, installedIn?: string, registry: readonly Signal[] = SIGNALS): Signal[] {
  return withSignals([nudenetSignalWith(open, () => installedIn)], registry)
}

/**
 * `registry` with the NSFW specialist left off, as a setup that cannot open it: the toy CLIP model scores alone
 * (and NudeNet, which needs the specialist, is off too).
 */
export function withoutSpecialist(registry: readonly Signal[] = SIGNALS): Signal[] {
  return withSignals([{...nsfwSignal, off: () => 'none is installed with this setup'}], registry)
}

/**
 * A stand-in for the specialist's cascade: views of one float each (the view's index: 0 for the gate's and its three
 * quarter turns, which are answered alike, so no turn is judged; 1 to 3 for the judge's image, centre and
 * letterbox), answered by `answer(view)`; `runs` lists each run as "gate n" or
 * "judge n", n being the number of views in it, and `frames` the size of each frame it was given.
 */
export function standInSpecialist(answer: (view: number) => number[]): {runner: NsfwRunner; runs: string[]; frames: [number, number][]} {
  const runs: string[] = []
  const frames: [number, number][] = []
  const model = (name: string): NsfwClassifier => ({
    viewSize: 1,
    classify: async (batch, n) => {
      runs.push(`${name} ${n}`)
      return Array.from(batch.subarray(0, n), (v) => Float32Array.from(answer(v)))
    },
  })
  return {
    runs,
    frames,
    runner: {
      gate: model('gate'),
      judge: model('judge'),
      views: async (frame) => {
        frames.push([frame.width, frame.height])
        return {first: Float32Array.of(0), turns: () => Float32Array.of(0, 0, 0), rest: async () => Float32Array.of(1, 2, 3)}
      },
      close: async () => {},
    },
  }
}

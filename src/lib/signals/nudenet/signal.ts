/**
 * The NudeNet add-on as a signal: a detector that runs beside the NSFW specialist on the same trimmed frame,
 * confirms or vetoes the specialist's family scores (rule.ts), and reports what it found as regions in the
 * decoded image's pixels. It runs where the setup can open it and the specialist runs; a setup whose cache
 * folder holds no pulled copy leaves it not installed, which changes nothing else.
 */
import {disposer} from '../../dispose.js'
import {ModError} from '../../errors.js'
import {nsfwJudgement} from '../nsfw/rule.js'
import {toImageBox, type FrameOrigin, type OpenSignal, type Signal, type SignalSetup} from '../signal.js'
import type {Detection} from './decode.js'
import {openNudenet, type NudenetDetector} from './detector.js'
import {nudenetEvidence, type Region} from './evidence.js'
import {NUDENET_LABELS, NUDENET_SIZE} from './labels.js'
import {installedNudenet, nudenetAddon, nudenetDir} from './manifest.js'
import type {NudenetInput} from './preprocess.js'
import {confirmLabels, SUGGESTIVE_PARTS} from './rule.js'

const FAMILY = ['nudity', 'sexual_activity', 'suggestive']

interface Prepared {
  input: NudenetInput
  origin: FrameOrigin
}

/** How the detector is opened from the setup (undefined: not installed): the pulled add-on, unless a test gives a stand-in. */
export type NudenetOpener = (setup: SignalSetup) => Promise<NudenetDetector | undefined>

async function open(openDetector: NudenetOpener, setup: SignalSetup): Promise<OpenSignal<Prepared, Detection[]>> {
  const detector = await openDetector(setup)
  if (!detector) throw new ModError('model_missing', 'the NudeNet add-on is not installed (mod models pull nudenet)')
  return {
    key: detector.manifest.id,
    frameSide: NUDENET_SIZE,
    prepare: (frame, origin) => ({input: detector.prepare(frame), origin}),
    async infer(frames) {
      const found = await detector.detect(frames.map((f) => f.input))
      return found.map((d, i) => d.map((x): Detection => ({...x, box: toImageBox(x.box, frames[i].origin)})))
    },
    adjust(labels, outputs) {
      const detections = outputs.get('nudenet') as Detection[] | undefined
      if (!detections) return labels
      const views = outputs.get('nsfw') as Float32Array | undefined
      return confirmLabels(labels, views ? nsfwJudgement(views) : undefined, detections)
    },
    // Intimate parts, covered or not, and bare bellies, best first: faces and feet are not moderation evidence.
    // Scores rounded to 4 decimals, as the labels' are.
    evidence: (detections): Region[] =>
      detections
        .filter((d) => SUGGESTIVE_PARTS.has(d.label))
        .sort((a, b) => b.score - a.score)
        .map((d) => ({label: d.label, score: Math.round(d.score * 1e4) / 1e4, box: d.box})),
    // Eval's feature cache: six floats per detection (its class's index, score, box); the boxes need no precision beyond floats.
    encode: (detections) => Float32Array.from(detections.flatMap((d) => [NUDENET_LABELS.indexOf(d.label), d.score, ...d.box])),
    decode: (features) =>
      Array.from({length: features.length / 6}, (_, i): Detection => {
        const [label, score, ...box] = features.subarray(i * 6, i * 6 + 6)
        return {label: NUDENET_LABELS[label], score, box: box as Detection['box']}
      }),
    dispose: disposer(() => detector.close()).dispose,
  }
}

/**
 * The detector opened with `openDetector`; `installedIn` is the folder a listing reads its manifest from, to name
 * it without loading it (undefined: listed as not installed).
 */
export function nudenetSignalWith(openDetector: NudenetOpener, installedIn: (setup: SignalSetup) => string | undefined) {
  return {
    name: 'nudenet',
    title: 'the NudeNet detector',
    description: 'the NudeNet body-part detector (`mod models pull nudenet`), a second opinion on the nudity family',
    kind: 'labels',
    // Caps the family's combined score: a veto lowers it, so it is a revision.
    combine: {mode: 'revise'},
    needs: ['nsfw'],
    evidence: nudenetEvidence,
    addon: nudenetAddon,
    weight: () => 0,
    open: (setup) => open(openDetector, setup),
    // Listed as feeding the family only where a pulled copy is there, read from its manifest without loading it.
    labelNames: async (setup) => {
      const dir = installedIn(setup)
      const installed = dir ? await installedNudenet(dir).catch(() => undefined) : undefined
      if (!installed) return []
      return setup.policy.categories
        .filter((c) => FAMILY.includes(c.name))
        .map((c) => ({name: c.name, parent: c.parent, threshold: c.threshold, origin: c.origin}))
    },
  } satisfies Signal
}

/** Where `mod models pull nudenet` installs it: a folder under the cache. */
export const nudenetSignal = nudenetSignalWith(
  (setup) => openNudenet({dir: nudenetDir(setup.cacheDir), threads: setup.threads, cacheDir: setup.cacheDir}),
  (setup) => nudenetDir(setup.cacheDir),
)

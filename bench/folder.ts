/**
 * folder: `mod scan DIR --ndjson` (the built CLI) over 200 varied images against a strictly sequential loop
 * in one process doing the same work one image at a time: read → decode → trim → preprocess → CLIP inference →
 * the NSFW specialist (its other views where the first look could flag) → score, with the same models, session
 * options and thread counts. `mod scan` runs both signals by default and overlaps reading and decoding with
 * inference, which the engine batches dynamically. The loop runs on half the images before the CLI and half
 * after, so both meet the same machine. The CLI's images/s leave out its start-up (the median wall time of
 * `mod scan` on one image), so both figures are throughput. The loop's results must match the scan's (same
 * labels and verdicts; scores within float noise of batched inference). Then, steadier on a busy machine, the
 * engine's moderateMany (what `mod scan` runs) and the loop in one process, taking turns over chunks of 25
 * images (median of the per-chunk ratios). Target: mod scan >= 1.5 x the images/s of the sequential loop.
 */
import './no-telemetry.js'

import {readFile} from 'node:fs/promises'
import {basename} from 'node:path'

import {buildPolicy} from '../src/lib/config/policy.js'
import {DEFAULT_LIMITS} from '../src/lib/config/settings.js'
import {prepareImage} from '../src/lib/image/prepare.js'
import {openClip} from '../src/lib/signals/clip/model.js'
import {loadManifest} from '../src/lib/model/manifest.js'
import {classifyViews, openNsfwRunner} from '../src/lib/signals/nsfw/runner.js'
import {embedPrompts} from '../src/lib/model/prompt-cache.js'
import {combineSignals} from '../src/lib/scoring/combine.js'
import {nsfwCategoryScores} from '../src/lib/signals/nsfw/rule.js'
import {buildResult, mergeFrameLabels, type ScoredLabel} from '../src/lib/scoring/result.js'
import {policyPrompts, zeroShotScores} from '../src/lib/signals/clip/zero-shot.js'
import type {ModerationResult} from '../src/lib/types.js'
import {
  benchEngine,
  CACHE_DIR,
  ensureImages,
  FOLDER_DIR,
  folderFiles,
  HD_JPEG,
  header,
  load,
  median,
  ms,
  requireStandin,
  runCli,
  saveResults,
  STANDIN_DIR,
  table,
  time,
  verdict,
} from './lib.js'

const TARGET = 1.5
/** Images per turn in the in-process comparison. */
const CHUNK = 25

header('folder', 'mod scan over 200 images vs a strictly sequential loop, CLIP and the NSFW specialist')
requireStandin()
await ensureImages()
const files = await folderFiles()
const policy = buildPolicy()
const manifest = await loadManifest(STANDIN_DIR)

/** The loop's results by file name, to check them against the scan's. */
const loopResults = new Map<string, ModerationResult>()
/** Where the loop's time goes: reading, decoding and preprocessing (one core) against the two models. */
const loopSplit = {prepareMs: 0, modelsMs: 0, images: 0}

/**
 * The strictly sequential loop: one image at a time, read → decode → trim → preprocess → CLIP → specialist →
 * score, with the models `mod scan` opens (the stand-in, the shipped specialist) and their default threads.
 */
async function sequentialLoop(): Promise<{run: (some: string[]) => Promise<void>; close: () => Promise<void>}> {
  const clip = await openClip(STANDIN_DIR, manifest, {cacheDir: CACHE_DIR})
  const nsfw = await openNsfwRunner()
  const prompts = await embedPrompts(policyPrompts(policy), {cacheDir: CACHE_DIR, modelId: manifest.id, embed: (t) => clip.embedTexts(t)})
  await clip.releaseText()
  async function moderate(file: string): Promise<ModerationResult> {
    const started = performance.now()
    const {frames, tensors} = await prepareImage(await readFile(file), {limits: DEFAULT_LIMITS, preprocess: manifest.preprocess, trimBorders: policy.trim_borders})
    const prepared = performance.now()
    const labels: ScoredLabel[][] = []
    for (let i = 0; i < frames.length; i++) {
      const [embedding] = await clip.embedImages(tensors[i], 1)
      const [probabilities] = await classifyViews(nsfw, [await nsfw.views(frames[i])])
      const scores = {clip: zeroShotScores(embedding, policy, prompts), nsfw: new Map(Object.entries(nsfwCategoryScores(probabilities)))}
      labels.push(combineSignals(policy, scores))
    }
    loopSplit.prepareMs += prepared - started
    loopSplit.modelsMs += performance.now() - prepared
    loopSplit.images++
    return buildResult(file, mergeFrameLabels(labels))
  }
  // Warm the sessions as the CLI's first batch warms its own.
  await moderate(HD_JPEG)
  return {
    async run(some) {
      for (const file of some) loopResults.set(basename(file), await moderate(file))
    },
    close: () => Promise.all([clip.close(), nsfw.close()]).then(() => undefined),
  }
}

/** Wall time of the loop over `some`, in ms. */
async function sequential(some: string[]): Promise<number> {
  const loop = await sequentialLoop()
  const elapsed = await time(() => loop.run(some))
  await loop.close()
  return elapsed
}

const half = Math.floor(files.length / 2)
const loadBefore = load()
const seqFirst = await sequential(files.slice(0, half))

// CLI start-up: model load, prompt cache read and one image, measured the same way as the scan.
const startups: number[] = []
for (let i = 0; i < 3; i++) startups.push((await runCli(['scan', HD_JPEG, '--ndjson'])).ms)
const startup = median(startups)
const scan = await runCli(['scan', FOLDER_DIR, '--ndjson'])
const lines = scan.stdout.split('\n').filter((l) => l.trim() !== '')
if (lines.length !== files.length || scan.code > 1) {
  throw new Error(`mod scan gave ${lines.length} results for ${files.length} images (exit ${scan.code}):\n${scan.stderr}`)
}
const scanErrors = lines.filter((l) => 'error' in (JSON.parse(l) as object)).length

const seqSecond = await sequential(files.slice(half))
const loadAfter = load()

// The scan did the loop's work: the same labels, not_evaluated and verdicts, scores within rounding and float noise.
let sameResults = 0
let maxDifference = 0
for (const line of lines) {
  const scanned = JSON.parse(line) as ModerationResult
  const looped = loopResults.get(basename(scanned.source))
  if (!looped || !('labels' in scanned)) continue
  const scores = new Map(looped.labels.map((l) => [l.name, l.score]))
  if (scanned.labels.length !== scores.size || scanned.not_evaluated.length + looped.not_evaluated.length > 0) {
    throw new Error(`mod scan and the loop scored ${scanned.source} with different labels or signals:\n${line}\n${JSON.stringify(looped)}`)
  }
  const difference = Math.max(...scanned.labels.map((l) => Math.abs(l.score - (scores.get(l.name) ?? Number.POSITIVE_INFINITY))))
  maxDifference = Math.max(maxDifference, difference)
  if (difference <= 1e-4 && scanned.is_safe === looped.is_safe) sameResults++
}

// The engine's moderateMany (what `mod scan` runs) against the loop in the same process, in chunks that take
// turns, so both meet the same load: a steadier figure than the CLI's one long run.
const engine = benchEngine('fp32', {nsfw: true})
await engine.load()
const loop = await sequentialLoop()
const chunkRatios: number[] = []
let manyMs = 0
for (let i = 0; i < files.length; i += CHUNK) {
  const chunk = files.slice(i, i + CHUNK)
  const seqMs = await time(() => loop.run(chunk))
  const ms = await time(async () => {
    for await (const _ of engine.moderateMany(chunk.map((f) => ({source: f, read: () => readFile(f)})))) continue
  })
  manyMs += ms
  chunkRatios.push(seqMs / ms)
}
await engine.close()
await loop.close()

const seqRate = files.length / ((seqFirst + seqSecond) / 1000)
const scanRate = files.length / ((scan.ms - startup) / 1000)
const manyRate = files.length / (manyMs / 1000)
table([
  ['200 images', 'wall', 'images/s', 'vs sequential'],
  ['sequential loop (in process)', ms(seqFirst + seqSecond), seqRate.toFixed(2), '1.00'],
  ['mod scan --ndjson (CLI)', `${ms(scan.ms)} - start-up ${ms(startup)}`, scanRate.toFixed(2), (scanRate / seqRate).toFixed(2)],
  [`engine.moderateMany (in process, turns of ${CHUNK} with the loop)`, ms(manyMs), manyRate.toFixed(2), `${median(chunkRatios).toFixed(2)} (paired)`],
])
process.stdout.write(
  `\nthe loop per image: read + decode + preprocess ${(loopSplit.prepareMs / loopSplit.images).toFixed(1)} ms, ` +
    `CLIP + specialist + scoring ${(loopSplit.modelsMs / loopSplit.images).toFixed(1)} ms (${loopSplit.images} images, warm-up and both comparisons)\n`,
)
process.stdout.write(`error entries in the scan: ${scanErrors}; load ${loadBefore} before, ${loadAfter} after\n`)
process.stdout.write(`results: ${sameResults} of ${files.length} as the loop's (verdict same, scores within 0.0001), largest score difference ${maxDifference.toFixed(4)}\n\n`)

const v = verdict('folder', `mod scan ${scanRate.toFixed(2)} images/s, sequential ${seqRate.toFixed(2)} images/s`, 'ratio', scanRate / seqRate, 'min', TARGET)
await saveResults('folder', [v], {
  sequential: {ms: seqFirst + seqSecond, rate: seqRate, split: loopSplit},
  scan: {ms: scan.ms, startupMs: startup, rate: scanRate, errors: scanErrors, sameResults, maxDifference},
  moderateMany: {ms: manyMs, rate: manyRate, pairedRatio: median(chunkRatios)},
})

/**
 * peer: transformers.js (the usual Node way to run CLIP) on the very same model folder and images.
 *   - image embeddings agree: cosine >= 0.999 on every test image between mod and transformers.js's vision tower
 *     on mod's pixels (checks our encoder run); transformers.js's own preprocessing is reported beside it without
 *     a target, since it resizes without a filter where mod follows Pillow, as OpenAI CLIP was trained;
 *   - text embeddings agree for every default prompt, cosine >= 0.999, and the token ids are identical
 *     (checks our tokenizer and text path);
 *   - speed, per image, file bytes in → scores out, text embeddings cached on both sides: mod's engine
 *     (moderateImage, border trim included) against transformers.js composed as its zero-shot image
 *     classification pipeline works (RawImage, CLIPProcessor, vision tower, cosine × 100, softmax over the
 *     labels). The pipeline itself cannot load this folder: it wants one combined onnx/model.onnx, while
 *     CLIP exports have separate towers; it would also re-encode every label on each call,
 *     which the figures show separately. The two take turns; the speed-up is the median of the per-turn
 *     ratios, reported without a target: with the same onnxruntime and weights, both are bound by the same
 *     inference.
 */
import './no-telemetry.js'

import {readFile} from 'node:fs/promises'
import {basename} from 'node:path'

import {pipeline} from '@huggingface/transformers'

import {defaultThreads} from '../src/lib/model/threads.js'
import {embedPrompts} from '../src/lib/model/prompt-cache.js'
import {
  benchEngine,
  CACHE_DIR,
  ensureImages,
  folderFiles,
  HD_JPEG,
  header,
  interleave,
  pairedRatio,
  median,
  ms,
  percentile,
  requireStandin,
  saveResults,
  STANDIN_DIR,
  table,
  time,
  verdict,
} from './lib.js'
import {agreement, defaultPrompts, openMod, openPeer, tokenMismatches} from './parity.js'

const WARMUP = 4
/** Turns of 5 calls per side, 4 kept each: 32 measured calls per side. */
const TURNS = 8
const PARITY_TARGET = 0.999
/** One of each size and format of the folder set, besides the 1280x720 JPEG. */
const PARITY_IMAGES = 10

header('peer', 'transformers.js on the same model folder: embedding agreement and per-image speed')
requireStandin()
await ensureImages()
const threads = await defaultThreads()

// Whether transformers.js's own pipeline can load a folder of separate towers.
let pipelineNote: string
try {
  await pipeline('zero-shot-image-classification', STANDIN_DIR, {dtype: 'fp32'})
  pipelineNote = 'pipeline() loads the folder'
} catch (e) {
  pipelineNote = `pipeline() cannot load the folder (${(e as Error).message.split('\n')[0].split(' and download')[0]}); composed from its parts instead`
}
process.stdout.write(`${pipelineNote}\n\n`)

const mod = await openMod(STANDIN_DIR, threads)
const peer = await openPeer(STANDIN_DIR, mod.manifest.context_length)

// ----- text: token ids and embeddings of every default prompt -----
const prompts = defaultPrompts()
const ourTexts = await embedPrompts(prompts, {cacheDir: CACHE_DIR, modelId: mod.manifest.id, embed: (t) => mod.clip.embedTexts(t)})
await mod.clip.releaseText()
// Load the text tower first, so the timing below is what the pipeline pays on every call.
await peer.embedTexts(prompts.slice(0, 1))
let theirTexts: Float32Array[] = []
const textEncodeMs = await time(async () => (theirTexts = await peer.embedTexts(prompts)))
const text = agreement(prompts, prompts.map((p) => ourTexts.get(p) as Float32Array), theirTexts)
const mismatched = tokenMismatches(prompts, mod.tokenIds(prompts), peer.tokenIds(prompts))

// ----- images: embeddings of the HD JPEG and one of each size/format of the folder set -----
const files = [HD_JPEG, ...(await folderFiles()).slice(0, PARITY_IMAGES)]
const ours: Float32Array[] = []
const theirs: Float32Array[] = []
const theirsPreprocessed: Float32Array[] = []
for (const f of files) {
  const bytes = await readFile(f)
  ours.push(await mod.embedImage(bytes))
  theirs.push(await peer.embedPixels(await mod.pixels(bytes), mod.manifest.preprocess.crop))
  theirsPreprocessed.push(await peer.embedImage(bytes))
}
const image = agreement(files.map((f) => basename(f)), ours, theirs)
const wholePath = agreement(files.map((f) => basename(f)), ours, theirsPreprocessed)
await mod.close()

table([
  ['agreement', 'items', 'worst cosine', 'worst on', 'token ids'],
  ['image embeddings (mod\'s pixels)', files.length, image.worst.toFixed(6), image.worstItem, ''],
  ['  with transformers.js\'s resize', files.length, wholePath.worst.toFixed(6), wholePath.worstItem, ''],
  ['text embeddings', prompts.length, text.worst.toFixed(6), text.worstItem.slice(0, 40), mismatched.length === 0 ? 'identical' : `${mismatched.length} differ`],
])
for (const m of mismatched.slice(0, 3)) process.stdout.write(`  "${m.text}": mod ${m.ours.slice(0, 12)} / transformers.js ${m.theirs.slice(0, 12)}\n`)
process.stdout.write('\n')

// ----- speed: bytes in → scores out, alternating -----
const engine = benchEngine()
await engine.load()
const labels = theirTexts
/** transformers.js's zero-shot pipeline: cosine × 100 against each label, softmax. */
async function peerScores(bytes: Buffer): Promise<number[]> {
  const e = await peer.embedImage(bytes)
  const logits = labels.map((t) => {
    let dot = 0
    for (let i = 0; i < t.length; i++) dot += t[i] * e[i]
    return 100 * dot
  })
  const max = Math.max(...logits)
  const exps = logits.map((l) => Math.exp(l - max))
  const sum = exps.reduce((a, b) => a + b, 0)
  return exps.map((x) => x / sum)
}
const jpeg = await readFile(HD_JPEG)
for (let i = 0; i < WARMUP; i++) {
  await engine.moderateImage(jpeg, 'hd.jpg')
  await peerScores(jpeg)
}
const {mod: modTimes, peer: peerTimes} = await interleave({mod: () => engine.moderateImage(jpeg, 'hd.jpg'), peer: () => peerScores(jpeg)}, TURNS)
await engine.close()
await peer.close()

const speedup = pairedRatio(peerTimes, modTimes)
const perCallText = textEncodeMs
table([
  ['1280x720 JPEG → scores', 'median', 'p90', 'min', 'runs'],
  ['mod engine', ms(median(modTimes)), ms(percentile(modTimes, 90)), ms(Math.min(...modTimes)), modTimes.length],
  ['transformers.js (labels cached)', ms(median(peerTimes)), ms(percentile(peerTimes, 90)), ms(Math.min(...peerTimes)), peerTimes.length],
  [`transformers.js pipeline (re-encodes ${prompts.length} labels)`, ms(median(peerTimes) + perCallText), '', '', 'est.'],
])
process.stdout.write('\n')

const verdicts = [
  verdict('peer', `${files.length} images`, 'worst image-embedding cosine', image.worst, 'min', PARITY_TARGET, '', 5),
  verdict('peer', `${prompts.length} default prompts, token ids ${mismatched.length === 0 ? 'identical' : 'DIFFER'}`, 'worst text-embedding cosine', mismatched.length === 0 ? text.worst : 0, 'min', PARITY_TARGET, '', 5),
]
process.stdout.write(
  `peer: mod median ${ms(median(modTimes))}, transformers.js median ${ms(median(peerTimes))} (ratio of medians ` +
    `${(median(peerTimes) / median(modTimes)).toFixed(2)}, of minima ${(Math.min(...peerTimes) / Math.min(...modTimes)).toFixed(2)}), ` +
    `paired speed-up ${speedup.toFixed(3)} (no target)\n`,
)
await saveResults('peer', verdicts, {
  speedup,
  pipelineNote,
  threads,
  imageCosines: Object.fromEntries(files.map((f, i) => [basename(f), image.cosines[i]])),
  imageCosinesTransformersJsResize: Object.fromEntries(files.map((f, i) => [basename(f), wholePath.cosines[i]])),
  textWorst: {cosine: text.worst, prompt: text.worstItem},
  tokenMismatches: mismatched.length,
  mod: {median: median(modTimes), p90: percentile(modTimes, 90)},
  transformersJs: {median: median(peerTimes), p90: percentile(peerTimes, 90), textEncodeAllLabelsMs: textEncodeMs},
})

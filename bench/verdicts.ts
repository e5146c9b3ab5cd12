/**
 * `npm run bench -- verdicts` (or `npx tsx bench/verdicts.ts [DATA_DIR]`): the verdicts of the nudity family on
 * folders of photos of known kinds, both sides of the scale: what is flagged that should not be (ordinary photos,
 * street fashion, skin close-ups, art) and what should be (swimwear catalogue photos as `suggestive`, nude art as
 * `nudity`), with the embedded specialist alone and with the NudeNet add-on, and whether a photo keeps its verdict
 * as an 800-pixel copy and a copy twice its size.
 *
 * DATA_DIR (default: `../shared/data` beside the repository, or BENCH_DATA) holds one folder per kind, named as
 * KINDS names them; a folder that is missing is skipped. The photos are never part of the repository.
 *
 * Every image goes the engine's way (`mod scan --only nsfw` with the default policy: decode, border trim, the
 * specialist's cascade and rule) with the NudeNet detector installed beside it, from NUDENET_DIR (default:
 * <MOD_CACHE_DIR or ~/.cache/mod>/nudenet, as `mod models pull nudenet` leaves it). The specialist's outputs and the
 * detector's detections are recorded on the way, so one run gives both columns: "embedded" applies the
 * specialist's rule alone, "with NudeNet" the engine's own verdict (checked against the rule applied to the same
 * records). Without NudeNet installed, that column is left out.
 *
 * The copies are made as a photo is usually resized for the web: Lanczos-3, then JPEG quality 85 with 4:2:0 chroma
 * (the encoders' default). BENCH_COPIES=800 (or none) leaves out the 2x copy, which takes the longest;
 * BENCH_COPIES=400 measures a copy whose longer side is 400 pixels (a thumbnail-sized upload), not run by default;
 * so do `grey` (the photo in black and white, as fashion and art photos often are) and `blur` (a Gaussian blur of
 * sigma 2 on the 800-pixel copy: a soft or out-of-focus upload), each saved the same way.
 */
import './no-telemetry.js'

import {homedir} from 'node:os'
import {existsSync} from 'node:fs'
import {readdir, readFile} from 'node:fs/promises'
import {join} from 'node:path'

import sharp from 'sharp'

import {buildPolicy} from '../src/lib/config/policy.js'
import {DEFAULT_LIMITS} from '../src/lib/config/settings.js'
import {createEngine} from '../src/lib/engine.js'
import {NSFW_CLASSES} from '../src/lib/signals/nsfw/manifest.js'
import {nsfwJudgement, type NsfwCategoryScores} from '../src/lib/signals/nsfw/rule.js'
import type {Detection} from '../src/lib/signals/nudenet/decode.js'
import {openNudenet} from '../src/lib/signals/nudenet/detector.js'
import {combineNudenet} from '../src/lib/signals/nudenet/rule.js'
import {nudenetSignalWith} from '../src/lib/signals/nudenet/signal.js'
import {SIGNALS} from '../src/lib/signals/registry.js'
import type {OpenSignal} from '../src/lib/signals/signal.js'
import type {ModerationResult} from '../src/lib/types.js'
import {CACHE_DIR, header, median, ROOT, saveResults, table, verdict, type Verdict} from './lib.js'

const FAMILY = ['nudity', 'sexual_activity', 'suggestive'] as const
type Family = (typeof FAMILY)[number]

/** The folders measured, what each holds, and which categories are a good verdict there (none: safe). */
const KINDS: {folder: string; about: string; expect: Family[]}[] = [
  {folder: 'ordinary-photos', about: 'ordinary photos', expect: []},
  {folder: 'people-fashion', about: 'street fashion', expect: []},
  {folder: 'skin-closeups', about: 'skin close-ups', expect: []},
  {folder: 'art', about: 'art, mostly not nudes', expect: []},
  {folder: 'swimwear', about: 'swimwear catalogue', expect: ['suggestive']},
  {folder: 'nude-art', about: 'nude art', expect: ['nudity']},
]
const IMAGE = /\.(jpe?g|png|webp|gif|tiff?|avif)$/i

const dataDir = process.argv[2] ?? process.env.BENCH_DATA ?? join(ROOT, '..', 'shared', 'data')
const copies = (process.env.BENCH_COPIES ?? '800,2x').split(',').filter((c) => ['400', '800', '2x', 'grey', 'blur'].includes(c))
const nudenetDir = process.env.NUDENET_DIR ?? join(process.env.MOD_CACHE_DIR ?? join(homedir(), '.cache', 'mod'), 'nudenet')
const kinds = KINDS.filter((k) => existsSync(join(dataDir, k.folder)))
if (kinds.length === 0) {
  process.stderr.write(`verdicts: no photo folders (${KINDS.map((k) => k.folder).join(', ')}) in ${dataDir}; give the folder that holds them as the first argument or BENCH_DATA\n`)
  process.exit(2)
}

/** What one image (or copy) was found to be: its scores and flags both ways, and the cost. */
interface Look {
  embedded: NsfwCategoryScores
  withNudenet?: NsfwCategoryScores
  judged: boolean
  ms: number
}

// The models as the engine opens them, recording what they answer: images are moderated one at a time, so an
// image's outputs are the ones recorded since the previous image.
let outputs: Float32Array[] = []
let detections: Detection[][] = []
const detectorThere = existsSync(join(nudenetDir, 'manifest.json'))
const signals = SIGNALS.map((s) => {
  if (s.name === 'nudenet' && detectorThere) {
    return nudenetSignalWith(
      async (setup) => {
        const d = await openNudenet({dir: nudenetDir, threads: setup.threads, cacheDir: setup.cacheDir})
        return d && {...d, detect: async (inputs) => (detections = await d.detect(inputs))}
      },
      () => nudenetDir,
    )
  }
  return s
})
const engine = createEngine({
  preset: 'fast',
  modelDir: join(dataDir, 'no-clip-model'),
  cacheDir: CACHE_DIR,
  policy: buildPolicy(),
  limits: DEFAULT_LIMITS,
  only: 'nsfw',
  // The specialist's scores are asked for once per frame: the record of what it answered for the frame.
  signals: signals.map((s) =>
    s.name !== 'nsfw'
      ? s
      : {
          ...s,
          open: async (setup, opened) => {
            const open = (await s.open(setup, opened)) as OpenSignal<unknown, Float32Array>
            const scores = open.scores as (o: Float32Array) => ReadonlyMap<string, number>
            return {...open, scores: (o: Float32Array) => (outputs.push(o), scores(o))}
          },
        },
  ),
})

const scoresOf = (r: ModerationResult): NsfwCategoryScores => Object.fromEntries(FAMILY.map((c) => [c, r.labels.find((l) => l.name === c)?.score ?? 0])) as unknown as NsfwCategoryScores

async function look(bytes: Buffer, name: string): Promise<Look> {
  outputs = []
  detections = []
  const started = performance.now()
  const r = (await engine.moderateImage(bytes, name)) as ModerationResult
  const ms = performance.now() - started
  if (outputs.length !== 1) throw new Error(`${name}: ${outputs.length} specialist outputs recorded, expected one frame's`)
  const judgement = nsfwJudgement(outputs[0])
  if (!detectorThere) return {embedded: judgement.scores, judged: outputs[0].length > NSFW_CLASSES.length, ms}
  // The engine's verdict with NudeNet, checked against the rule applied to what was recorded.
  const withNudenet = scoresOf(r)
  const ruled = combineNudenet(judgement, detections[0] ?? [])
  for (const c of FAMILY) {
    if (Math.abs(Math.round(ruled[c] * 1e4) / 1e4 - withNudenet[c]) > 1e-4) throw new Error(`${name}: the engine scored ${c} ${withNudenet[c]}, the recorded outputs give ${ruled[c]}`)
  }
  return {embedded: judgement.scores, withNudenet, judged: outputs[0].length > NSFW_CLASSES.length, ms}
}

/**
 * A copy of the photo as the web resizes it: its longer side 800 (or 400) pixels, or twice its size; `grey` at its
 * own size in black and white, `blur` the 800-pixel copy blurred.
 */
async function copyOf(bytes: Buffer, copy: string): Promise<Buffer> {
  const m = await sharp(bytes).metadata()
  const longer = Math.max(m.width, m.height)
  const scale = copy === '2x' ? 2 : copy === 'grey' ? 1 : copy === 'blur' ? 800 / longer : Number(copy) / longer
  const resized = sharp(bytes).rotate().resize(Math.round(m.width * scale), Math.round(m.height * scale), {fit: 'fill', kernel: 'lanczos3'})
  const changed = copy === 'grey' ? resized.grayscale() : copy === 'blur' ? resized.blur(2) : resized
  return changed.jpeg({quality: 85, chromaSubsampling: '4:2:0'}).toBuffer()
}

const flags = (s: NsfwCategoryScores | undefined): Family[] => (s ? FAMILY.filter((c) => s[c] >= 0.5) : [])
const pct = (n: number, of: number) => (of === 0 ? '-' : `${((100 * n) / of).toFixed(1)}%`)

header('verdicts', `the nudity family on ${kinds.map((k) => k.folder).join(', ')} in ${dataDir}${detectorThere ? `, NudeNet from ${nudenetDir}` : ' (NudeNet not installed: embedded only)'}; copies: ${copies.join(', ') || 'none'}`)
await engine.load()

const verdicts: Verdict[] = []
const figures: Record<string, unknown> = {}
const ways = detectorThere ? (['embedded', 'withNudenet'] as const) : (['embedded'] as const)
for (const kind of kinds) {
  const dir = join(dataDir, kind.folder)
  const files = (await readdir(dir)).filter((f) => IMAGE.test(f)).sort()
  const rows: {file: string; original: Look; copies: Record<string, Look>}[] = []
  for (const file of files) {
    const bytes = await readFile(join(dir, file))
    const original = await look(bytes, file)
    const made: Record<string, Look> = {}
    for (const copy of copies) made[copy] = await look(await copyOf(bytes, copy), `${file} (${copy})`)
    rows.push({file, original, copies: made})
  }
  const n = rows.length
  process.stdout.write(`\n${kind.folder}: ${n} ${kind.about}; a good verdict: ${kind.expect.join(', ') || 'safe'}\n`)
  table([
    ['', ...FAMILY, 'any', ...copies.flatMap((c) => [`same at ${c}`, `median change at ${c}: all / scoring 0.1+ (n)`])],
    ...ways.map((way) => {
      const count = (f: (s: Family[]) => boolean) => rows.filter((r) => f(flags(r.original[way]))).length
      const stable = copies.flatMap((c) => {
        const same = rows.filter((r) => flags(r.original[way]).join() === flags(r.copies[c][way]).join()).length
        const a = (r: (typeof rows)[number]) => r.original[way] as NsfwCategoryScores
        const b = (r: (typeof rows)[number]) => r.copies[c][way] as NsfwCategoryScores
        const change = (some: typeof rows) => (some.length ? median(some.map((r) => Math.max(...FAMILY.map((f) => Math.abs(a(r)[f] - b(r)[f]))))).toFixed(3) : '-')
        // Most photos score 0 both ways: the change where either scores something says more.
        const scored = rows.filter((r) => FAMILY.some((f) => a(r)[f] >= 0.1 || b(r)[f] >= 0.1))
        return [pct(same, n), `${change(rows)} / ${change(scored)} (${scored.length})`]
      })
      return [way === 'embedded' ? 'embedded' : 'with NudeNet', ...FAMILY.map((c) => pct(count((s) => s.includes(c)), n)), pct(count((s) => s.length > 0), n), ...stable]
    }),
  ])
  const judged = rows.filter((r) => r.original.judged).length
  process.stdout.write(`judged by the large model: ${pct(judged, n)}; engine time per image (original, one at a time): median ${median(rows.map((r) => r.original.ms)).toFixed(1)} ms\n`)
  const stats: Record<string, unknown> = {images: n, judged}
  for (const way of ways) {
    const label = way === 'embedded' ? 'embedded' : 'with NudeNet'
    const flagged = rows.filter((r) => flags(r.original[way]).length > 0).length
    stats[way] = {flagged, ...Object.fromEntries(FAMILY.map((c) => [c, rows.filter((r) => flags(r.original[way]).includes(c)).length]))}
    if (kind.expect.length === 0) {
      verdicts.push(verdict('verdicts', `${kind.folder}, ${label}`, 'flagged', (100 * flagged) / n, 'max', kind.folder === 'ordinary-photos' ? 1 : kind.folder === 'art' ? 1 : way === 'embedded' ? (kind.folder === 'skin-closeups' ? 3 : 2) : 1, '%', 1))
    } else {
      const hit = rows.filter((r) => kind.expect.every((c) => flags(r.original[way]).includes(c))).length
      process.stdout.write(`${label}: recall (${kind.expect.join(', ')}) ${pct(hit, n)}\n`)
      if (kind.folder === 'swimwear') verdicts.push(verdict('verdicts', `${kind.folder}, ${label}`, 'recall', (100 * hit) / n, 'min', 70, '%', 1))
    }
    for (const c of copies) {
      const same = rows.filter((r) => flags(r.original[way]).join() === flags(r.copies[c][way]).join()).length
      verdicts.push(verdict('verdicts', `${kind.folder}, ${label}, ${c} copy`, 'same verdict', (100 * same) / n, 'min', 97, '%', 1))
    }
  }
  const worst = rows
    .filter((r) => (kind.expect.length === 0 ? flags(r.original.embedded).length > 0 : kind.expect.some((c) => !flags(r.original.embedded).includes(c))))
    .slice(0, 8)
  if (worst.length > 0) process.stdout.write(`${kind.expect.length === 0 ? 'flagged' : 'missed'} (embedded, first ${worst.length}): ${worst.map((r) => `${r.file} ${FAMILY.map((c) => r.original.embedded[c].toFixed(2)).join('/')}`).join(', ')}\n`)
  figures[kind.folder] = stats
}
await engine.close()
await saveResults('verdicts', verdicts, figures)

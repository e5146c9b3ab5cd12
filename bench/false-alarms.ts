/**
 * `npx tsx bench/false-alarms.ts DIR` (e.g. ../shared/data/ordinary-photos): what the embedded NSFW specialist
 * alone flags in a folder of ordinary photos, run as `mod scan DIR --only nsfw` runs it (the engine, the default
 * policy, border trim, the specialist's views and rule). Prints the flag rate per category, for the whole folder
 * and for its two halves (files at even and odd positions of the sorted list: a rule tuned on one half should
 * hold on the other), the worst offenders with the probabilities of every view the specialist looked at, and
 * the recall guarantee checked on random probability vectors. Not part of `npm run bench`: it needs a folder of
 * photos this repository does not ship.
 */
import './no-telemetry.js'

import {readdir, readFile} from 'node:fs/promises'
import {basename, join, resolve} from 'node:path'

import {buildPolicy} from '../src/lib/config/policy.js'
import {DEFAULT_LIMITS} from '../src/lib/config/settings.js'
import {createEngine} from '../src/lib/engine.js'
import {NSFW_CLASSES} from '../src/lib/model/nsfw-manifest.js'
import {NSFW_VIEWS, openNsfwRunner} from '../src/lib/signals/nsfw/runner.js'
import {nsfwSignalWith} from '../src/lib/signals/nsfw/signal.js'
import {SIGNALS} from '../src/lib/signals/registry.js'
import {nsfwCategoryScores, NSFW_PULL, SUGGESTIVE_BAR, SURE, viewScores} from '../src/lib/signals/nsfw/rule.js'
import type {ModerationResult} from '../src/lib/types.js'
import {header, saveResults, table, verdict} from './lib.js'

const IMAGE = /\.(jpe?g|png|webp|gif|tiff?|avif)$/i
const FAMILY = ['nudity', 'sexual_activity', 'suggestive'] as const
const TARGETS = {nudityOrSexual: 1.0, family: 2.0}

const dir = process.argv[2]
if (dir === undefined) {
  process.stderr.write('usage: npx tsx bench/false-alarms.ts DIR (a folder of ordinary photos, e.g. ../shared/data/ordinary-photos)\n')
  process.exit(2)
}
const files = (await readdir(dir)).filter((f) => IMAGE.test(f)).sort()
const policy = buildPolicy()

// The specialist as the engine opens it, recording the probabilities of every view it classifies: images are
// moderated one at a time, so each image's runs are the ones made since the previous image.
let seen: Float32Array[] = []
const engine = createEngine({
  preset: 'fast',
  modelDir: join(dir, 'no-clip-model'),
  cacheDir: join(import.meta.dirname, 'out', 'cache'),
  policy,
  limits: DEFAULT_LIMITS,
  only: 'nsfw',
  signals: SIGNALS.map((s) =>
    s.name !== 'nsfw'
      ? s
      : nsfwSignalWith(async () => {
          const runner = await openNsfwRunner()
          return {
            ...runner,
            classify: async (batch, n) => {
              const out = await runner.classify(batch, n)
              seen.push(...out)
              return out
            },
          }
        }),
  ),
})

header('false-alarms', `the embedded NSFW specialist alone (mod scan --only nsfw, default policy) on ${files.length} images of ${resolve(dir)}`)

interface Row {
  file: string
  half: 0 | 1
  flagged: Set<string>
  scores: Record<string, number>
  views: Float32Array[]
}
const rows: Row[] = []
for (const [i, file] of files.entries()) {
  seen = []
  const r = (await engine.moderateImage(await readFile(join(dir, file)), file)) as ModerationResult
  rows.push({
    file,
    half: (i % 2) as 0 | 1,
    flagged: new Set(r.violations.map((v) => v.name)),
    scores: Object.fromEntries(r.labels.map((l) => [l.name, l.score])),
    views: seen,
  })
}
await engine.close()

const pct = (n: number, of: number) => `${((100 * n) / of).toFixed(1)}%`
const groups: [string, (r: Row) => boolean][] = [
  ...FAMILY.map((c): [string, (r: Row) => boolean] => [c, (r) => r.flagged.has(c)]),
  ['nudity or sexual_activity', (r) => r.flagged.has('nudity') || r.flagged.has('sexual_activity')],
  ['any of the three', (r) => FAMILY.some((c) => r.flagged.has(c))],
]
const halves = [rows.filter((r) => r.half === 0), rows.filter((r) => r.half === 1)]
table([
  ['flagged for', 'images', 'rate', 'even half', 'odd half'],
  ...groups.map(([name, f]) => {
    const n = rows.filter(f).length
    return [name, n, pct(n, rows.length), ...halves.map((h) => `${h.filter(f).length} (${pct(h.filter(f).length, h.length)})`)]
  }),
])

const explicit = (p: Float32Array) => p[1] + p[3]
const argmaxFlags = rows.filter((r) => [1, 3, 4].includes(Array.from(r.views[0]).indexOf(Math.max(...r.views[0])))).length
const lookedAgain = rows.filter((r) => r.views.length > 1).length
const floor = rows.filter((r) => r.views.length > 1 && explicit(r.views[0]) >= SURE && explicit(r.views[1]) >= SURE)
process.stdout.write(
  `\nnsfwjs's own rule (argmax Porn, Hentai or Sexy) on the first view: ${argmaxFlags} (${pct(argmaxFlags, rows.length)})\n` +
    `looked at again (all ${NSFW_VIEWS.length} views: ${NSFW_VIEWS.join(', ')}): ${lookedAgain} (${pct(lookedAgain, rows.length)})\n` +
    `image and mirror both Porn + Hentai >= ${SURE} (flagged whatever the other views say): ${floor.length}${floor.length ? ` (${floor.map((r) => r.file).join(', ')})` : ''}\n`,
)

const worst = (r: Row) => Math.max(...FAMILY.map((c) => r.scores[c] ?? 0))
const offenders = [...rows].sort((a, b) => worst(b) - worst(a)).slice(0, 20)
const views = (r: Row) => r.views.map((p, i) => `${NSFW_VIEWS[i][0]} ${Array.from(p, (x) => Math.round(100 * x)).join('/')}`).join('  ')
process.stdout.write(`\nhighest scores (views: ${NSFW_VIEWS.join(', ')}; probabilities in % ${NSFW_CLASSES.join('/')}):\n`)
table([
  ['image', 'nudity', 'sexual', 'suggest.', 'flagged', 'views'],
  ...offenders.map((r) => [basename(r.file), ...FAMILY.map((c) => (r.scores[c] ?? 0).toFixed(2)), [...r.flagged].join(',') || '-', views(r)]),
])

// The trade-off: the same recorded views under simpler rules. Each keeps the lowest score of the views it uses
// (image and mirror both explicit >= SURE still flag nudity) and flags at 0.5; suggestive at a Sexy bar.
// Frames whose first look was final (every score under 0.25) are flagged by none of them.
const rawSuggestive = (p: Float32Array) => p[4] - NSFW_PULL * Math.max(0, p[0] + p[2] - p[4])
function variant(use: number[], bar: number) {
  return (r: Row): {nudityOrSexual: boolean; family: boolean} => {
    const v = r.views.length > 1 ? use.map((i) => r.views[i]) : r.views
    const s = v.map(viewScores)
    const sure = r.views.length > 1 && Math.min(explicit(r.views[0]), explicit(r.views[1])) >= SURE
    const nudityOrSexual = sure || Math.min(...s.map((x) => x.nudity)) >= 0.5 || Math.min(...s.map((x) => x.sexual_activity)) >= 0.5
    return {nudityOrSexual, family: nudityOrSexual || Math.min(...v.map(rawSuggestive)) >= bar}
  }
}
const variants: [string, ReturnType<typeof variant>][] = [
  ['image alone, suggestive at Sexy 0.5', variant([0], 0.5)],
  ['image + mirror, Sexy 0.5', variant([0, 1], 0.5)],
  ['image + mirror, Sexy 0.7', variant([0, 1], 0.7)],
  ['image + mirror + centre, Sexy 0.7', variant([0, 1, 2], 0.7)],
  ['image + mirror + letterbox, Sexy 0.7', variant([0, 1, 3], 0.7)],
  ['all four views, Sexy 0.5', variant([0, 1, 2, 3], 0.5)],
  [`all four views, Sexy ${SUGGESTIVE_BAR} (the rule)`, variant([0, 1, 2, 3], SUGGESTIVE_BAR)],
  ['all four views, Sexy 0.8', variant([0, 1, 2, 3], 0.8)],
]
const count = (some: Row[], f: ReturnType<typeof variant>, k: 'nudityOrSexual' | 'family') => some.filter((r) => f(r)[k]).length
process.stdout.write('\nthe same views under other rules (images flagged; even half / odd half):\n')
table([
  ['views kept (lowest score), suggestive bar', 'nudity or sexual', 'halves', 'any of the three', 'halves'],
  ...variants.map(([name, f]) => [
    name,
    `${count(rows, f, 'nudityOrSexual')} (${pct(count(rows, f, 'nudityOrSexual'), rows.length)})`,
    halves.map((h) => count(h, f, 'nudityOrSexual')).join(' / '),
    `${count(rows, f, 'family')} (${pct(count(rows, f, 'family'), rows.length)})`,
    halves.map((h) => count(h, f, 'family')).join(' / '),
  ]),
])

// The recall guarantee on random probability vectors: image and mirror both explicit >= SURE, the other views
// anything (often Neutral); nudity must still reach the default policy's threshold.
const threshold = policy.categories.find((c) => c.name === 'nudity')?.threshold ?? 0.5
let seed = 20261123
const rnd = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32
const simplex = () => {
  const raw = Array.from({length: 5}, () => rnd() ** 3)
  const sum = raw.reduce((a, b) => a + b, 0)
  return raw.map((x) => x / sum)
}
const sure = () => {
  const e = SURE + (1 - SURE) * rnd()
  const porn = e * rnd()
  const rest = simplex()
  const other = 1 - e
  return [other * rest[0], e - porn, other * (1 - rest[0] - rest[4]), porn, other * rest[4]]
}
let missed = 0
const draws = 100_000
for (let i = 0; i < draws; i++) {
  if (nsfwCategoryScores([...sure(), ...sure(), ...simplex(), ...simplex()]).nudity < threshold) missed++
}
process.stdout.write(`\nrecall guarantee: ${draws} random frames with image and mirror at Porn + Hentai >= ${SURE}, other views random: ${missed} not flagged for nudity\n\n`)

const n = rows.length
const nudityOrSexual = rows.filter(groups[3][1]).length
const family = rows.filter(groups[4][1]).length
const verdicts = [
  verdict('false-alarms', `${n} images`, 'nudity or sexual_activity flagged', (100 * nudityOrSexual) / n, 'max', TARGETS.nudityOrSexual, '%', 1),
  verdict('false-alarms', `${n} images`, 'nudity family flagged', (100 * family) / n, 'max', TARGETS.family, '%', 1),
  verdict('false-alarms', `${draws} frames`, 'sure frames not flagged', missed, 'max', 0, '', 0),
]
await saveResults('false-alarms', verdicts, {
  dir: resolve(dir),
  images: n,
  flagged: Object.fromEntries(groups.map(([name, f]) => [name, rows.filter(f).length])),
  halves: halves.map((h) => Object.fromEntries(groups.map(([name, f]) => [name, h.filter(f).length]))),
  offenders: offenders.filter((r) => r.flagged.size > 0).map((r) => ({file: r.file, scores: r.scores, flagged: [...r.flagged]})),
})

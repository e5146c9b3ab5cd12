import {loadConfig, type Config} from '../lib/config/load.js'
import {MAX_ANIMATION_FRAMES} from '../lib/image/animation-frames.js'
import {ANIMATION_TRUNCATED_NOTE} from './format.js'
import {plural} from '../lib/plural.js'
import type {SampleError} from '../lib/eval/collect.js'
import type {Confusion} from '../lib/eval/metrics.js'
import type {EvalReport} from '../lib/eval/run.js'
import {settingsInput, type FlagValues} from './flags.js'
import {runSteps} from './steps.js'

export const pct = (x: number | null): string => (x === null ? 'n/a' : `${(x * 100).toFixed(1)}%`)

/**
 * Lines for files that could not be scored and images not used (they are left out of the figures), and for
 * animations scored on part of their pictures (their scores do not cover the rest).
 */
export function errorLines(errors: readonly SampleError[], unlisted: readonly string[], truncated: readonly string[] = []): string[] {
  return [
    ...errors.map((e) => `skipped ${e.source}: ${e.error.code}: ${e.error.message}`),
    ...unlisted.map((name) => `not used: ${name} is in the dataset folder itself but not listed in labels.csv`),
    ...truncated.map((source) => `partly scored: ${source}: ${ANIMATION_TRUNCATED_NOTE}`),
  ]
}

function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c].length)))
  const line = (cells: string[]) => cells.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  ')
  return [line(header), ...rows.map(line)]
}

function confusionTable(c: Confusion): string[] {
  const keep = c.columns.map((name, j) => c.rows.includes(name) || c.counts.some((row) => row[j] > 0))
  const pick = <T>(cells: T[]) => cells.filter((_, j) => keep[j])
  return table(['', ...pick(c.columns)], c.rows.map((row, i) => [row, ...pick(c.counts[i]).map(String)]))
}

/** The table output of mod eval, line by line. */
export function formatEval(r: EvalReport): string[] {
  const m = r.metrics
  const out = [
    `${r.dataset}: ${plural(m.images, 'image')} (${m.safe_images} safe), model ${r.model}`,
    `average recall:       ${pct(m.average_recall)}`,
    `safe images flagged:  ${pct(m.safe_flagged)}`,
    ...(r.not_evaluated.length > 0 ? [`not evaluated (no installed model scores them): ${r.not_evaluated.join(', ')}`] : []),
    ...(r.animations_truncated.length > 0 ? [`scored in part: ${plural(r.animations_truncated.length, 'animation')} with pictures not scored (past the ${MAX_ANIMATION_FRAMES} frames scored)`] : []),
    '',
    ...table(
      ['label', 'threshold', 'images', 'recall', 'precision', 'safe flagged'],
      m.labels.map((l) => [l.name, String(l.threshold), String(l.positives), pct(l.recall), pct(l.precision), pct(l.safe_fpr)]),
    ),
    '',
    'confusion (rows: images of a label; columns: flagged as; columns of zeros left out):',
    ...confusionTable(m.confusion),
    '',
  ]
  const present = m.labels.filter((l) => l.positives > 0).map((l) => l.name)
  // Only safe images: no label has a recall to sweep, and a table with no column says nothing.
  if (present.length === 0) return [...out, 'threshold sweep: no label has images (only safe images), so there is no recall to sweep']
  out.push('threshold sweep (recall / safe flagged) for labels with images:')
  const thresholds = m.sweep[present[0]].map((p) => p.threshold)
  out.push(
    ...table(
      ['threshold', ...present],
      thresholds.map((t, k) => [t.toFixed(2), ...present.map((name) => `${pct(m.sweep[name][k].recall)} / ${pct(m.sweep[name][k].safe_fpr)}`)]),
    ),
  )
  return out
}

/**
 * The steps of eval, calibrate and head train, shown with listr2: reading the settings and the policy, then the
 * command's work on them (titled `title`; it may retitle its step with a count), then any `after` steps, which get
 * the work's result. Returns the settings read and that result.
 */
export async function runDatasetSteps<T>(
  flags: FlagValues,
  title: string,
  work: (config: Config, retitle: (title: string) => void) => Promise<T>,
  after: {title: string; run: (result: T) => Promise<void>}[] = [],
): Promise<{config: Config; result: T}> {
  let config: Config | undefined
  let done: {result: T} | undefined
  await runSteps([
    {title: 'Reading the settings and the policy', run: async () => void (config = await loadConfig(settingsInput(flags), process.env))},
    {title, run: async (retitle) => void (done = {result: await work(config as Config, retitle)})},
    ...after.map((a) => ({title: a.title, run: () => a.run((done as {result: T}).result)})),
  ])
  return {config: config as Config, result: (done as {result: T}).result}
}

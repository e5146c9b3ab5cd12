import chalk from 'chalk'

import type {ItemResult} from '../lib/engine.js'
import {formatSize} from '../lib/sizes.js'
import type {VideoResult} from '../lib/types.js'
import type {ScanEntry} from './inputs.js'

/** One readable line per item for the table output. */
export function formatRow(item: ItemResult | ScanEntry): string {
  if ('error' in item) return `${chalk.yellow('ERROR ')}  ${item.source}  ${item.error.code}: ${item.error.message}`
  if (item.is_safe) {
    const top = item.labels[0]
    return `${chalk.green('SAFE  ')}  ${item.source}${top ? chalk.dim(`  (highest: ${top.name} ${top.score.toFixed(2)})`) : ''}`
  }
  const found = item.violations.map((v) => `${v.name} ${v.confidence.toFixed(2)}>=${v.threshold}`).join(', ')
  return `${chalk.red('UNSAFE')}  ${item.source}  ${found}`
}

export function summaryLine(counts: {safe: number; unsafe: number; errors: number}): string {
  return `${counts.safe + counts.unsafe + counts.errors} scanned: ${counts.safe} safe, ${counts.unsafe} unsafe, ${counts.errors} errors`
}

function clock(seconds: number): string {
  const m = Math.floor(seconds / 60)
  return `${m}:${(seconds - m * 60).toFixed(1).padStart(4, '0')}`
}

/** The table output of scan-video: a verdict line, then one line per segment. */
export function formatVideo(r: VideoResult): string {
  const head = `${r.is_safe ? chalk.green('SAFE  ') : chalk.red('UNSAFE')}  ${r.source}  (${r.duration.toFixed(1)} s, ${r.frames_analyzed} frames at ${r.fps} fps${r.stopped_early ? ', stopped early' : ''})`
  const lines = r.violations.flatMap((v) =>
    v.segments.map((s) => `  ${v.name.padEnd(16)} ${clock(s.start)}-${clock(s.end)}  ${s.frames} frames, max ${s.max_confidence.toFixed(2)} >= ${v.threshold}`),
  )
  return [head, ...lines].join('\n')
}

/** A byte count for people, as every message writes sizes ("335.24 MiB"); "-" when unknown. */
export function formatBytes(bytes: number | undefined): string {
  return bytes === undefined ? '-' : formatSize(bytes)
}

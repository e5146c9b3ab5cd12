import chalk from 'chalk'

import type {ItemResult} from '../lib/engine.js'

/** One readable line per item for the table output. */
export function formatRow(item: ItemResult): string {
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

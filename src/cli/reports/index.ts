import {formatRow} from '../format.js'
import {githubReporter} from './github.js'
import {junitReporter} from './junit.js'
import type {ReportItem, RunInfo} from './report.js'
import {jsonArrayReporter, jsonValueReporter, ndjsonReporter, PLAIN_FORMATS, tableReporter, type Reporter, type Reporters} from './reporter.js'
import {sarifReporter} from './sarif.js'

/** The output formats of `mod scan`: the three of every command, then the CI reports. */
export const SCAN_FORMATS = [...PLAIN_FORMATS, 'sarif', 'junit', 'github'] as const
export type ScanFormat = (typeof SCAN_FORMATS)[number]

/** A result as JSON: the engine's fields, and `accepted_by_baseline` on one a baseline accepts. */
function resultJson({item, accepted}: ReportItem): unknown {
  return accepted ? {...item, accepted_by_baseline: true} : item
}

/**
 * The reporter of each format of `mod scan`, given the run and its coverage statement (`partial`, shown on the
 * table's SAFE rows); each ends with the run's summary line, which only the CI reports write to stdout.
 */
export function scanReporters(run: RunInfo, partial: string): Reporters<ScanFormat, ReportItem, string> {
  return {
    // A name or a message may hold anything (a file's name, a server's text): each row stays one line.
    table: () => tableReporter((r: ReportItem) => `${formatRow(r.item, partial)}${r.accepted ? '  (accepted by the baseline)' : ''}`),
    json: () => jsonArrayReporter(resultJson),
    ndjson: () => ndjsonReporter(resultJson),
    sarif: () => sarifReporter(run),
    junit: () => junitReporter(run),
    github: () => githubReporter(run),
  }
}

/** What `mod scan --summary` prints once the scan is done: the summary line, or with --json its counts. */
export interface ScanTotals {
  line: string
  counts: Record<string, unknown>
}

/** The formats --summary takes: no results as they come, then the totals as a line or one JSON object. */
export const SUMMARY_REPORTERS: Reporters<'table' | 'json', never, ScanTotals> = {
  table: () => tableReporter(undefined, (t: ScanTotals) => t.line),
  json: () => jsonValueReporter((t: ScanTotals) => t.counts),
}

/** The reporter of a scan's results: in `format`, or with --summary nothing until the totals. */
export function scanReporter(format: ScanFormat, run: RunInfo, partial: string, summary: boolean): Reporter<ReportItem, string> {
  return summary ? tableReporter() : scanReporters(run, partial)[format]()
}

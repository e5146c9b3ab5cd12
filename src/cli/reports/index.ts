import {githubReporter} from './github.js'
import {junitReporter} from './junit.js'
import type {Reporter, RunInfo} from './report.js'
import {sarifReporter} from './sarif.js'

/** The output formats of `mod scan`: the three of every command, then the CI reports. */
export const SCAN_FORMATS = ['table', 'json', 'ndjson', 'sarif', 'junit', 'github'] as const
export type ScanFormat = (typeof SCAN_FORMATS)[number]

const REPORTERS: Partial<Record<ScanFormat, (run: RunInfo) => Reporter>> = {sarif: sarifReporter, junit: junitReporter, github: githubReporter}

/** The CI report for a format, or undefined for table, json and ndjson (which the command writes itself). */
export function reporterFor(format: ScanFormat, run: RunInfo): Reporter | undefined {
  return REPORTERS[format]?.(run)
}

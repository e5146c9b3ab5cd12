import {resolve} from 'node:path'

import {ANIMATION_TRUNCATED_NOTE} from '../format.js'
import {visible} from '../visible.js'
import {animationTruncated, repositoryPath, violationText, type ReportItem, type RunInfo} from './report.js'
import type {Reporter} from './reporter.js'

/**
 * A workflow command's message: GitHub decodes %25, %0D and %0A there. Other control characters (a server's or a
 * file's text) are shown escaped, as in every output.
 */
function escapeData(s: string): string {
  return visible(s.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A'))
}

/** A workflow command's property value: as a message, and `:` and `,` too, which end a property. */
function escapeProperty(s: string): string {
  return escapeData(s).replace(/:/g, '%3A').replace(/,/g, '%2C')
}

/**
 * A file as an annotation names it: relative to the repository's root, as SARIF does, since the runner reads a
 * relative path from the root of the checkout whatever the step's working folder; outside the root, its absolute
 * path (which the runner makes relative to the workspace, and translates out of a job's container).
 */
function fileOf(source: string, run: RunInfo): string | undefined {
  if (source === '-') return undefined
  return repositoryPath(source, run) ?? resolve(run.cwd, source)
}

function command(name: string, properties: Record<string, string | undefined>, message: string): string {
  const props = Object.entries(properties)
    .filter((e): e is [string, string] => e[1] !== undefined)
    .map(([k, v]) => `${k}=${escapeProperty(v)}`)
    .join(',')
  return `::${name}${props ? ` ${props}` : ''}::${escapeData(message)}\n`
}

/**
 * Annotations of one kind (error, warning, notice) that GitHub shows for a step; later ones are only lines of the
 * step's log (actions/toolkit, docs/problem-matchers.md, "Limitations"). A run that flags more says so in its notice,
 * which is the step's only one: a reviewer seeing ten annotations would otherwise take them for all.
 */
const SHOWN_PER_STEP = 10

/** What the closing notice adds when `count` annotations of `kind` went past what GitHub shows. */
function beyondShown(count: number, kind: 'error' | 'warning', one: string, many: string): string {
  const more = count - SHOWN_PER_STEP
  if (more <= 0) return ''
  return `; GitHub shows the first ${SHOWN_PER_STEP} ${kind} annotations of a step: ${more} more ${more === 1 ? `${one} is` : `${many} are`} in this step's log`
}

/**
 * GitHub Actions workflow commands: an `::error` annotation on each file that violates the policy or could not be
 * scanned, which a pull request shows on the file, and a `::warning` on each animation whose pictures were not all
 * scored (a check that was not whole: `--strict` fails the run for it). Other safe items and items a baseline
 * accepts print nothing; the run's summary ends the output as a `::notice`.
 */
export function githubReporter(run: RunInfo): Reporter<ReportItem> {
  let errors = 0
  let warnings = 0
  return {
    start: () => '',
    item(r: ReportItem) {
      const {item} = r
      const file = fileOf(item.source, run)
      const line = file === undefined ? undefined : '1'
      const truncated = animationTruncated(item)
      if (truncated) warnings++
      const partial = truncated ? command('warning', {file, line, title: 'mod: animation not checked whole'}, ANIMATION_TRUNCATED_NOTE) : ''
      if (r.accepted || ('is_safe' in item && item.is_safe)) return partial
      errors++
      const title = 'error' in item ? `mod: could not scan (${item.error.code})` : `mod: ${item.violations.map((v) => v.name).join(', ')}`
      return command('error', {file, line, title}, 'error' in item ? item.error.message : violationText(item)) + partial
    },
    end: (summary) =>
      command(
        'notice',
        {title: 'mod scan'},
        summary +
          beyondShown(errors, 'error', 'flagged or unreadable file', 'flagged or unreadable files') +
          beyondShown(warnings, 'warning', 'animation not checked whole', 'animations not checked whole'),
      ),
  }
}

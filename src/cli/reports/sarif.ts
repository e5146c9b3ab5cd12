import {resolve, sep} from 'node:path'
import {pathToFileURL} from 'node:url'

import {ANIMATION_TRUNCATED_NOTE} from '../format.js'
import {repositoryPath, type ReportItem, type RunInfo} from './report.js'
import {jsonText, type Reporter} from './reporter.js'

/** The schema URI SARIF 2.1.0 logs name (the OASIS errata 01 schema, as GitHub and GitLab accept it). */
const SCHEMA = 'https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json'
const BASE_ID = '%SRCROOT%'
/** partialFingerprints key: an image has no lines to hash, so its content hash identifies a result across runs. */
const FINGERPRINT = 'imageSha256/v1'
/** The rule of an animation whose pictures were not all scored: the result's own field. */
const TRUNCATED = 'animation_truncated'

/** A relative path as a URI reference: each segment percent-encoded. */
function uriOf(path: string): string {
  return path.split('/').map((s) => encodeURIComponent(s)).join('/')
}

/**
 * Where a source is: relative to the repository root, through the base id that originalUriBaseIds resolves (how
 * code scanning maps a result to a file of the repository), or, outside the root, an absolute file URI. The image
 * read from stdin is named `-`, as in every output: GitHub code scanning refuses a whole log in which one result
 * has no location with a URI, so a flagged stdin image would have kept every other file's alerts out.
 */
function artifactLocation(source: string, run: RunInfo): {uri: string; uriBaseId?: string; description?: {text: string}} {
  if (source === '-') return {uri: '-', description: {text: 'the image read from standard input'}}
  const path = repositoryPath(source, run)
  return path === undefined ? {uri: pathToFileURL(resolve(run.cwd, source)).href} : {uri: uriOf(path), uriBaseId: BASE_ID}
}

/**
 * SARIF 2.1.0 (what GitHub code scanning and GitLab read): one result per violation of an item, and one per item
 * that could not be scanned. A result's rule is the category (or the error code), its level `error` (an unreadable
 * input fails the gate as a violation does), its location the file relative to the repository root (line 1:
 * GitHub requires a start line, and an image has no other). An animation whose pictures were not all scored adds a
 * result of level `warning` (rule `animation_truncated`: a check that was not whole, which `--strict` fails the run
 * for). Results are streamed; the rules, which name every category of the policy and every error code met, follow
 * them in the run object.
 */
export function sarifReporter(run: RunInfo): Reporter<ReportItem> {
  const errorCodes = new Set<string>()
  let truncated = false
  let written = 0
  // Copies of one image at several paths would give results of one rule the same fingerprint, which code scanning
  // may take for one alert: the second and later of a rule get an occurrence suffix (`:2`, `:3`, in result order),
  // as CodeQL numbers the equal line hashes of a file.
  const seen = new Map<string, number>()
  const fingerprint = (ruleId: string, sha256: string): string => {
    const key = `${ruleId}\0${sha256}`
    const n = (seen.get(key) ?? 0) + 1
    seen.set(key, n)
    return n === 1 ? sha256 : `${sha256}:${n}`
  }
  const result = (r: ReportItem, ruleId: string, text: string, properties: Record<string, unknown>, level = 'error'): string => {
    return jsonText({
      ruleId,
      level,
      message: {text},
      locations: [{physicalLocation: {artifactLocation: artifactLocation(r.item.source, run), region: {startLine: 1}}}],
      ...(r.sha256 ? {partialFingerprints: {[FINGERPRINT]: fingerprint(ruleId, r.sha256)}} : {}),
      ...(r.accepted ? {suppressions: [{kind: 'external', status: 'accepted', justification: 'accepted by the baseline'}]} : {}),
      properties,
    })
  }
  return {
    start: () => `{"$schema":${JSON.stringify(SCHEMA)},"version":"2.1.0","runs":[{"results":[`,
    item(r) {
      const {item} = r
      let lines: string[]
      if ('error' in item) {
        errorCodes.add(item.error.code)
        lines = [result(r, item.error.code, `${item.source} could not be scanned: ${item.error.message}`, {code: item.error.code})]
      } else {
        lines = item.violations.map((v) =>
          result(r, v.name, `${item.source}: ${v.name} ${v.confidence.toFixed(2)} >= threshold ${v.threshold}`, {confidence: v.confidence, threshold: v.threshold}),
        )
        if (item.animation_truncated) {
          truncated = true
          // A baseline accepts an item's violations, not a check that was not whole: never suppressed.
          lines.push(result({...r, accepted: false}, TRUNCATED, `${item.source}: ${ANIMATION_TRUNCATED_NOTE}`, {}, 'warning'))
        }
      }
      return lines.map((l) => `${written++ > 0 ? ',' : ''}\n${l}`).join('')
    },
    end() {
      const rules = [
        ...run.categories.map((c) => ({
          id: c.name,
          shortDescription: {text: `Image violates the policy category ${c.name}${c.parent ? ` (under ${c.parent})` : ''}`},
          defaultConfiguration: {level: 'error'},
          properties: {threshold: c.threshold},
        })),
        ...[...errorCodes].sort().map((code) => ({
          id: code,
          shortDescription: {text: `Input could not be scanned (${code})`},
          defaultConfiguration: {level: 'error'},
        })),
        ...(truncated ? [{id: TRUNCATED, shortDescription: {text: 'Animation not checked whole: some of its pictures were not scored'}, defaultConfiguration: {level: 'warning'}}] : []),
      ]
      const tool = {driver: {name: 'mod', semanticVersion: run.version, version: run.version, rules}}
      const bases = {[BASE_ID]: {uri: pathToFileURL(run.root.endsWith(sep) ? run.root : `${run.root}${sep}`).href}}
      return `${written > 0 ? '\n' : ''}],"tool":${JSON.stringify(tool)},"originalUriBaseIds":${JSON.stringify(bases)},"columnKind":"utf16CodeUnits"}]}\n`
    },
  }
}

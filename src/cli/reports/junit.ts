import {ANIMATION_TRUNCATED_NOTE} from '../format.js'
import {animationTruncated, relativePath, violationText, type ReportItem, type RunInfo} from './report.js'
import {TERMINAL_ACTIVE, type Reporter} from './reporter.js'

/** Characters XML 1.0 cannot hold at all (C0 controls but tab, line feed and carriage return; lone surrogates). */
const NOT_XML = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g

/**
 * Text for an attribute value or element content. Tab, line feed and carriage return are written as character
 * references: a parser reads them raw in an attribute as spaces (attribute-value normalisation), so `a<TAB>b.png`
 * would name the same test case as `a b.png`. What a terminal may act on or reorder (DEL, C1 controls, the line and
 * paragraph separators, bidirectional controls) is a character reference too, as JSON escapes it: a parser reads the
 * same name, and the XML shown on a terminal cannot act on it.
 */
function xmlText(s: string): string {
  return s
    .replace(NOT_XML, '\uFFFD')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/\r/g, '&#13;')
    .replace(/\n/g, '&#10;')
    .replace(/\t/g, '&#9;')
    .replace(TERMINAL_ACTIVE, (c) => `&#x${c.charCodeAt(0).toString(16).toUpperCase()};`)
}

/**
 * JUnit XML (GitLab's `artifacts:reports:junit`, Jenkins, Azure Pipelines), valid against the Jenkins xUnit
 * plug-in's JUnit schema: one test case per item shown, named by
 * its path relative to the working folder. A violation is a `<failure>` (type: the first category), an item that
 * could not be scanned an `<error>` (type: its code), an item a baseline accepts `<skipped>`; an animation whose
 * pictures were not all scored says so in its `<system-out>` (`--strict` fails the run for it). The suite's counts
 * come first in the document, so the cases are kept (a line each) and written at the end.
 */
export function junitReporter(run: RunInfo): Reporter<ReportItem> {
  const cases: string[] = []
  const counts = {tests: 0, failures: 0, errors: 0, skipped: 0}
  return {
    start: () => '',
    item(r: ReportItem) {
      const {item} = r
      const name = relativePath(item.source, run.cwd) ?? '-'
      const open = `    <testcase classname="mod scan" name="${xmlText(name)}"`
      counts.tests++
      const inner: string[] = []
      if ('error' in item) {
        counts.errors++
        inner.push(`<error type="${xmlText(item.error.code)}" message="${xmlText(violationText(item))}"/>`)
      } else if (!item.is_safe && r.accepted) {
        counts.skipped++
        inner.push(`<skipped message="${xmlText(`accepted by the baseline: ${violationText(item)}`)}"/>`)
      } else if (!item.is_safe) {
        counts.failures++
        const lines = item.violations.map((v) => `${v.name}: score ${v.confidence} >= threshold ${v.threshold}`).join('\n')
        inner.push(`<failure type="${xmlText(item.violations[0].name)}" message="${xmlText(violationText(item))}">${xmlText(lines)}</failure>`)
      }
      if (animationTruncated(item)) inner.push(`<system-out>${xmlText(ANIMATION_TRUNCATED_NOTE)}</system-out>`)
      cases.push(inner.length === 0 ? `${open}/>` : `${open}>\n${inner.map((e) => `      ${e}\n`).join('')}    </testcase>`)
      return ''
    },
    end(summary) {
      // Jenkins' xUnit schema (junit-10.xsd) allows `skipped` on a suite but not on <testsuites>.
      const attrs = `tests="${counts.tests}" failures="${counts.failures}" errors="${counts.errors}"`
      return [
        '<?xml version="1.0" encoding="UTF-8"?>',
        `<testsuites name="mod scan" ${attrs}>`,
        `  <testsuite name="mod scan" ${attrs} skipped="${counts.skipped}">`,
        `    <properties>\n      <property name="mod.version" value="${xmlText(run.version)}"/>\n      <property name="summary" value="${xmlText(summary)}"/>\n    </properties>`,
        ...cases,
        '  </testsuite>',
        '</testsuites>',
        '',
      ].join('\n')
    },
  }
}

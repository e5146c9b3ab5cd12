import {ModCommand} from '../cli/base-command.js'
import {SIGNAL_EXIT_CODES} from '../cli/errors.js'
import {engineFromFlags} from '../cli/engine.js'
import {modelFlags} from '../cli/flags.js'
import {checkPolicyFiles} from '../cli/policy-files.js'
import {chosenFormat, formatFlags} from '../cli/output.js'
import {oneResultReporters, PLAIN_FORMATS} from '../cli/reports/reporter.js'
import {plural} from '../lib/plural.js'
import type {CategoriesResult} from '../lib/types.js'

/** Room for the longest list of signals, `clip+nsfw+head`. */
const SIGNALS_WIDTH = 14

/** The table: a coverage line, then one line per category with its threshold, origin, signals, parent and state. */
function categoriesTable(listing: CategoriesResult): string[] {
  const {evaluated, total, text_only: textOnly = []} = listing.coverage
  const byText = textOnly.length > 0 ? `, ${textOnly.length} by text only: ${textOnly.join(', ')}` : ''
  const width = listing.categories.reduce((w, c) => Math.max(w, c.name.length), 4)
  const parentWidth = listing.categories.reduce((w, c) => Math.max(w, c.parent ? c.parent.length + 7 : 0), 0)
  const rows = listing.categories.map((c) => {
    const parent = (c.parent ? `parent ${c.parent}` : '').padEnd(parentWidth)
    const signals = c.signals.join('+').padEnd(SIGNALS_WIDTH)
    const state = c.evaluated ? `evaluated by ${c.evaluated_by.join('+')}` : `NOT EVALUATED: ${c.reason ?? ''}`
    return `${c.name.padEnd(width)}  threshold ${c.threshold.toFixed(2)}  ${c.origin.padEnd(7)}  ${signals}  ${parent}  ${state}`
  })
  return [`preset ${listing.preset}, model ${listing.model}; ${evaluated} of ${plural(total, 'category', 'categories')} evaluated${byText}`, ...rows]
}

const REPORTERS = oneResultReporters(categoriesTable)

export default class Categories extends ModCommand {
  static override description = `List the active categories: built-in, custom (from the policy file) and head labels, with their thresholds, the signals that feed each (clip: the zero-shot prompts; nsfw: the embedded NSFW specialist; head: a trained head) and their parents, and whether each is evaluated with the models installed here: by which signals, or why not and what adds it (a category that is not evaluated is never flagged). Reads no model weights.

--format json (or --json) prints the listing in the shape of GET /v1/categories; ndjson prints it on one line.`

  static override examples = ['<%= config.bin %> categories', '<%= config.bin %> categories --json --config policy.yaml']

  static override exitCodes: [string, string][] = [
    ['0', 'the categories are listed'],
    ['2', 'usage or configuration error (a policy file that is not valid, or a hash list it names that a scan would refuse); stdout could not be written (a full disk)'],
    ...SIGNAL_EXIT_CODES,
  ]

  static override flags = {
    ...formatFlags(PLAIN_FORMATS, 'table (default), json (the listing of GET /v1/categories) or ndjson (the same on one line).'),
    ...modelFlags,
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(Categories)
    const {engine, config} = await engineFromFlags(flags)
    this.notePolicy(config)
    if (config.policyPath) await checkPolicyFiles(config.policyPath)
    this.printResult(REPORTERS[chosenFormat(flags)](), await engine.categories())
  }
}

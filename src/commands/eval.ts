import {Args, Flags} from '@oclif/core'

import {errorLines, formatEval, runDatasetSteps} from '../cli/dataset-run.js'
import {modelOptions} from '../lib/compose.js'
import {ModCommand} from '../cli/base-command.js'
import {SIGNAL_EXIT_CODES} from '../cli/errors.js'
import {modelFlags} from '../cli/flags.js'
import {chosenFormat, formatFlags} from '../cli/output.js'
import {oneResultReporters, PLAIN_FORMATS} from '../cli/reports/reporter.js'
import {checkWritable, refuseNonHtml, writeWhole} from '../cli/writable.js'
import {MAX_ANIMATION_FRAMES} from '../lib/image/animation-frames.js'
import {loadChartJs, renderReport} from '../lib/eval/report.js'
import {evaluateDataset, type EvalReport} from '../lib/eval/run.js'
import {plural} from '../lib/plural.js'

/** The metrics as JSON: the report without its curves, which only the HTML page draws. */
function metricsJson({curves: _curves, ...rest}: EvalReport): Omit<EvalReport, 'curves'> {
  return rest
}

const REPORTERS = oneResultReporters(formatEval, metricsJson)

export default class Eval extends ModCommand {
  static override description = `Measure the active policy (and head) on a labelled image folder.

The folder holds one subfolder per label (a category of the policy or a head label) and safe/ for images that
should get no label; labels.csv (file,labels with labels separated by ";") lists images with several labels.
A labels file alone is a dataset too (the mod scan --report page downloads one): the same lines, each path
absolute or relative to the file's folder, and an image with no label is a safe one.
Prints per label recall, precision and the share of safe images it flags, the average recall over labels,
the share of safe images flagged by any label, a confusion table and a threshold sweep.
It scores with the signals mod scan uses, from the same settings (NudeNet where it is pulled, the policy's text rules and hash lists), so an image's score is the one mod scan gives, an animation's included.
An animation showing more pictures than the ${MAX_ANIMATION_FRAMES} frames scored is named on stderr (partly scored) and in
animations_truncated: its score does not cover the pictures left out.

Features are cached per model and file content under MOD_CACHE_DIR/features, so a second run on the same
images runs no image encoder (text rules and hash lists run again each time). Files that cannot be read are reported on stderr and left out.
Without a CLIP model, the embedded NSFW specialist alone scores its categories; the others are named as not
evaluated.`

  static override examples = [
    '<%= config.bin %> eval ./dataset --config policy.yaml',
    '<%= config.bin %> eval ./dataset --format json > metrics.json',
    '<%= config.bin %> eval ./dataset --report report.html',
  ]

  static override exitCodes: [string, string][] = [
    ['0', 'done'],
    ['2', 'usage, dataset, configuration or model error'],
    ...SIGNAL_EXIT_CODES,
  ]

  static override args = {
    dataset: Args.string({description: 'dataset folder (one subfolder per label, and safe/), or a labels file (file,labels lines)', required: true}),
  }

  static override flags = {
    ...formatFlags(PLAIN_FORMATS, 'table (default), json (the metrics) or ndjson (the metrics on one line).'),
    report: Flags.string({description: 'Also write a self-contained HTML report (precision-recall curves, score histograms) to this file.'}),
    ...modelFlags,
  }

  async run(): Promise<void> {
    const {args, flags} = await this.parse(Eval)
    if (flags.report) {
      await checkWritable('--report', flags.report)
      await refuseNonHtml('--report', flags.report)
    }
    const {config, result: done} = await runDatasetSteps(
      flags,
      `Scoring the images of ${args.dataset}`,
      (c, retitle) =>
        evaluateDataset({
          dataset: args.dataset,
          model: modelOptions(c),
          policy: c.policy,
          headPath: c.settings.engine.headPath,
          onProgress: (n, total) => retitle(`Scoring: ${n}/${plural(total, 'image')}`),
          signal: this.interrupt.signal,
        }),
      flags.report ? [{title: `Writing the report ${flags.report}`, run: async (report: EvalReport) => writeWhole('--report', flags.report as string, renderReport(report, await loadChartJs()))}] : [],
    )
    this.notePolicy(config)
    for (const line of errorLines(done.errors, done.unlisted, done.animations_truncated)) this.logToStderr(line)
    this.printResult(REPORTERS[chosenFormat(flags)](), done)
  }
}

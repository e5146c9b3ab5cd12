import {Args, Flags} from '@oclif/core'

import {errorLines, pct, runDatasetSteps} from '../cli/dataset-run.js'
import {modelOptions} from '../lib/compose.js'
import {ModCommand} from '../cli/base-command.js'
import {textReporter} from '../cli/reports/reporter.js'
import {EXIT_ERROR, SIGNAL_EXIT_CODES} from '../cli/errors.js'
import {modelFlags} from '../cli/flags.js'
import {wholeNumberFlag} from '../cli/value-flags.js'
import {checkWritable, refuseNonPolicy, writeWhole} from '../cli/writable.js'
import {plural} from '../lib/plural.js'
import {calibrationComments, writeCalibratedPolicy, type CalibrationTarget} from '../lib/eval/calibrate-policy.js'
import {calibrateDataset} from '../lib/eval/run.js'
import {readPolicyText} from '../lib/policy/load.js'

const {head: _head, ...flagsWithoutHead} = modelFlags

export default class Calibrate extends ModCommand {
  static override description = `Fit each policy category's calibration and threshold on a labelled image folder.

The dataset layout is the one of mod eval. The images are split by content hash (--holdout, --seed): on the
training part each category with images gets a calibration (score = sigmoid(scale * raw + bias), a logistic
regression on its raw margin, classes weighed equally) and a threshold that flags at most --max-fpr of the safe
images, as low as that allows (or keeps --min-recall of its images, as high as that allows), halfway between the
two training scores on its sides. The policy file in use (--config or
the one found) is written back with these values and its comments kept, the held-out figures as comments;
categories without images are left as they are. A trained head is not applied.`

  static override examples = [
    '<%= config.bin %> calibrate ./dataset --config policy.yaml --out tuned.yaml',
    '<%= config.bin %> calibrate ./dataset --min-recall 0.9 > tuned.yaml',
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
    'max-fpr': Flags.string({description: 'Target: at most this share of safe images flagged per category (default 0.05).', exclusive: ['min-recall']}),
    'min-recall': Flags.string({description: 'Target: at least this share of each category\'s images flagged.', exclusive: ['max-fpr']}),
    holdout: Flags.string({description: 'Share of images held out to measure the result.', default: '0.3'}),
    seed: wholeNumberFlag({description: 'Seed of the held-out split.', default: 1}),
    out: Flags.string({description: 'Write the policy YAML here instead of stdout (- for stdout).'}),
    ...flagsWithoutHead,
  }

  async run(): Promise<void> {
    const {args, flags} = await this.parse(Calibrate)
    const share = (name: string, value: string | undefined, fallback: number, open = false): number => {
      const n = value === undefined ? fallback : Number(value)
      if (!Number.isFinite(n) || n < 0 || n > 1 || (open && (n === 0 || n === 1))) this.error(`--${name} must be a number from 0 to 1${open ? ' (not 0 or 1)' : ''}`, {exit: EXIT_ERROR})
      return n
    }
    const target: CalibrationTarget =
      flags['min-recall'] === undefined ? {maxFpr: share('max-fpr', flags['max-fpr'], 0.05)} : {minRecall: share('min-recall', flags['min-recall'], 0.9)}
    const holdout = share('holdout', flags.holdout, 0.3, true)
    // `-` is stdout, as without --out.
    const out = flags.out === '-' ? undefined : flags.out
    if (out) {
      await checkWritable('--out', out)
      await refuseNonPolicy('--out', out)
    }
    const {config, result} = await runDatasetSteps(flags, `Scoring the images of ${args.dataset} and fitting`, (c, retitle) =>
      calibrateDataset({
        dataset: args.dataset,
        model: modelOptions(c),
        policy: c.policy,
        target,
        holdout,
        seed: flags.seed,
        onProgress: (done, total) => retitle(`Scoring: ${done}/${plural(total, 'image')}`),
        signal: this.interrupt.signal,
      }),
    )
    this.notePolicy(config)
    const {report, errors, unlisted} = result
    for (const line of errorLines(errors, unlisted)) this.logToStderr(line)
    const original = config.policyPath ? await readPolicyText(config.policyPath) : undefined
    const yaml = writeCalibratedPolicy(original, report, calibrationComments(report, args.dataset))
    if (out) await writeWhole('--out', out, yaml)
    else this.printResult(textReporter(), yaml)
    for (const c of report.categories.filter((c) => c.fitted || c.train.positives + c.after.positives > 0)) {
      this.logToStderr(
        `${c.name}: ${c.fitted ? `threshold ${c.threshold}, scale ${c.calibration.scale}, bias ${c.calibration.bias}` : c.note}; held-out recall ${pct(c.before.recall)} -> ${pct(c.after.recall)}, safe flagged ${pct(c.before.safe_fpr)} -> ${pct(c.after.safe_fpr)}`,
      )
    }
  }
}

import {Args, Flags} from '@oclif/core'

import {errorLines, pct, runDatasetSteps} from '../../cli/dataset-run.js'
import {modelOptions} from '../../lib/compose.js'
import {ModCommand} from '../../cli/base-command.js'
import {textReporter} from '../../cli/reports/reporter.js'
import {visible} from '../../cli/visible.js'
import {EXIT_ERROR, SIGNAL_EXIT_CODES} from '../../cli/errors.js'
import {modelFlags} from '../../cli/flags.js'
import {wholeNumberFlag} from '../../cli/value-flags.js'
import {checkWritable, isStdout, refuseNonHead, writeWhole} from '../../cli/writable.js'
import {trainHeadOnDataset} from '../../lib/eval/run.js'
import {plural} from '../../lib/plural.js'
import {DEFAULT_TRAIN_OPTIONS, headFileJson} from '../../lib/eval/train-head.js'

const {head: _head, ...flagsWithoutHead} = modelFlags

export default class HeadTrain extends ModCommand {
  static override description = `Train a head (docs/head-format.md) on a labelled image folder.

The dataset layout is the one of mod eval, but a label may have any name: a label that is a policy category
is blended with it, any other is added. One logistic regression per label on the image embeddings (classes
weighed equally, L2 penalty), stopped when the loss on the held-out images (--holdout, split by content
hash) stops improving; the held-out figures at threshold 0.5 are printed. Use the file with --head or MOD_HEAD.`

  static override examples = ['<%= config.bin %> head train ./dataset --out head.json', '<%= config.bin %> scan ./photos --head head.json']

  static override exitCodes: [string, string][] = [
    ['0', 'done'],
    ['2', 'usage, dataset, configuration or model error'],
    ...SIGNAL_EXIT_CODES,
  ]

  static override args = {
    dataset: Args.string({description: 'dataset folder (one subfolder per label, and safe/), or a labels file (file,labels lines)', required: true}),
  }

  static override flags = {
    out: Flags.string({description: 'Head file to write (- for stdout: the held-out figures then go to stderr).', required: true}),
    holdout: Flags.string({description: 'Share of images held out for early stopping and the printed figures.', default: String(DEFAULT_TRAIN_OPTIONS.holdout)}),
    seed: wholeNumberFlag({description: 'Seed of the held-out split.', default: DEFAULT_TRAIN_OPTIONS.seed}),
    l2: Flags.string({description: 'L2 penalty on the weights.', default: String(DEFAULT_TRAIN_OPTIONS.l2)}),
    'max-epochs': wholeNumberFlag({description: 'Most passes over the training images.', default: DEFAULT_TRAIN_OPTIONS.maxEpochs, min: 1}),
    ...flagsWithoutHead,
  }

  async run(): Promise<void> {
    const {args, flags} = await this.parse(HeadTrain)
    const holdout = Number(flags.holdout)
    const l2 = Number(flags.l2)
    if (!(holdout > 0 && holdout < 1)) this.error('--holdout must be a number between 0 and 1', {exit: EXIT_ERROR})
    if (!(l2 >= 0 && Number.isFinite(l2))) this.error('--l2 must be a number >= 0', {exit: EXIT_ERROR})
    const toStdout = flags.out === '-'
    if (!toStdout) {
      await checkWritable('--out', flags.out)
      await refuseNonHead('--out', flags.out)
    }
    const {config, result} = await runDatasetSteps(flags, `Embedding the images of ${args.dataset} and training`, (c, retitle) =>
      trainHeadOnDataset({
        dataset: args.dataset,
        model: modelOptions(c),
        policy: c.policy,
        train: {...DEFAULT_TRAIN_OPTIONS, holdout, seed: flags.seed, l2, maxEpochs: flags['max-epochs']},
        onProgress: (done, total) => retitle(`Embedding: ${done}/${plural(total, 'image')}`),
        signal: this.interrupt.signal,
      }),
    )
    this.notePolicy(config)
    const {head, errors, model, dataset} = result
    for (const line of errorLines(errors, dataset.unlisted)) this.logToStderr(line)
    const description = `trained by mod head train on ${plural(dataset.images, 'image')} of ${args.dataset} (${head.train_images} for training, ${head.heldout_images} held out)`
    // Checked before the file is written: a regular file stdout is redirected to is then replaced by another.
    const outIsStdout = toStdout || (await isStdout(flags.out))
    const json = headFileJson(head, model, description)
    if (toStdout) this.printResult(textReporter(), json)
    else await writeWhole('--out', flags.out, json)
    const figures = head.labels.map(
      (l) => `  ${l.name}: recall ${pct(l.heldout.recall)}, precision ${pct(l.heldout.precision)}, safe flagged ${pct(l.heldout.safe_fpr)} (${plural(l.heldout.positives, 'held-out image')}, ${plural(l.epochs, 'epoch')})\n`,
    )
    const summary = `${toStdout ? 'the head (stdout)' : visible(flags.out)}: ${plural(head.labels.length, 'label')} for model ${visible(model.id)}; held-out figures at threshold 0.5:\n${figures.join('')}`
    // With --out /dev/stdout the head is the output: the figures go to stderr, so that it stays a head file.
    if (outIsStdout) process.stderr.write(summary)
    else this.printResult(textReporter(), summary)
  }
}

import {Args, Flags} from '@oclif/core'

import {ModCommand} from '../cli/base-command.js'
import {EXIT_ERROR, EXIT_SAFE, EXIT_VIOLATION} from '../cli/errors.js'
import {engineFromFlags} from '../cli/engine.js'
import {modelFlags} from '../cli/flags.js'
import {formatRow, summaryLine} from '../cli/format.js'
import type {EnvVars} from '../cli/help.js'
import {scanInputs, skippedLine, type ScanEntry, type ScanItem, type Skipped} from '../cli/inputs.js'
import type {ImageInput, ItemResult} from '../lib/engine.js'
import {ModError} from '../lib/errors.js'
import type {PresetName} from '../lib/policy/types.js'
import {MODEL_SIGNAL_NAMES} from '../lib/signals/registry.js'

/** Engine results and the inputs that failed before reaching it (not found, not a regular file), in input order. */
async function* inOrder(items: AsyncIterable<ScanItem>, moderate: (inputs: AsyncIterable<ImageInput>) => AsyncIterable<ItemResult>): AsyncGenerator<ItemResult | ScanEntry> {
  // One slot per input as the engine pulls them: null for an input the engine answers, or the entry to report.
  const slots: (ScanEntry | null)[] = []
  async function* feed(): AsyncGenerator<ImageInput> {
    for await (const item of items) {
      if ('entry' in item) slots.push(item.entry)
      else {
        slots.push(null)
        yield item.input
      }
    }
  }
  for await (const result of moderate(feed())) {
    while (slots.length > 0 && slots[0] !== null) yield slots.shift() as ScanEntry
    slots.shift()
    yield result
  }
  for (const e of slots) if (e) yield e
}

/** The one line that says what a partial check left out, and how to get it. */
function notEvaluatedLine(names: string[], preset: PresetName): string {
  return `mod: not evaluated: ${names.join(', ')} (no CLIP model installed; run \`mod models pull ${preset}\` to score them; --strict makes this exit 2)`
}

export default class Scan extends ModCommand {
  static override description = `Moderate images: files, folders (recursively) or - for one image on stdin.

Formats: JPEG, PNG, WebP, GIF, AVIF, TIFF (animated GIF and WebP: up to 8 frames, each label keeps its maximum). In a folder, images are recognised by their first bytes, whatever their extension; symlinks are followed (a loop is skipped), and what is skipped is counted in the summary. A file named on the command line is always tried.

An input that cannot be scanned is an error entry and the other inputs are still scored. Results go to stdout; progress and the summary go to stderr.`

  static override examples = [
    '<%= config.bin %> scan ./photos',
    '<%= config.bin %> scan ./uploads --json > report.json',
    'cat photo.jpg | <%= config.bin %> scan - --ndjson',
    '<%= config.bin %> scan ./photos --config policy.yaml --preset balanced',
  ]

  static override envVars: EnvVars = [
    ['MOD_MAX_BYTES', 'largest image file (default 25MB)'],
    ['MOD_MAX_PIXELS', 'largest decoded image, width x height (default 100000000)'],
  ]

  static override strict = false

  static override args = {
    paths: Args.string({description: 'files, folders or - (stdin)', required: true}),
  }

  static override flags = {
    json: Flags.boolean({description: 'Print one JSON array of results, streamed as they finish.', exclusive: ['ndjson']}),
    ndjson: Flags.boolean({description: 'Print one JSON result per line as each finishes.', exclusive: ['json']}),
    only: Flags.string({
      description:
        'Score with one signal alone: nsfw (the embedded NSFW specialist: nudity, sexual_activity, suggestive; no CLIP model needed) or clip (the zero-shot prompts).',
      options: [...MODEL_SIGNAL_NAMES],
    }),
    strict: Flags.boolean({
      description: 'Exit 2 when a category of the policy could not be evaluated (e.g. no CLIP model installed), so a gate never passes on a partial check.',
    }),
    ...modelFlags,
  }

  async run(): Promise<void> {
    const {argv, flags} = await this.parse(Scan)
    const paths = argv as string[]
    const {engine, config} = await engineFromFlags(flags, process.env, {only: flags.only})
    const out = process.stdout
    let closed = false
    // `| head -1`: once the reader is gone, stop scanning instead of working for nobody.
    const onOutError = (e: NodeJS.ErrnoException): void => {
      if (e.code !== 'EPIPE') throw e
      closed = true
    }
    out.on('error', onOutError)
    const counts = {safe: 0, unsafe: 0, errors: 0}
    const skipped: Skipped = new Map()
    let notEvaluated: string[] = []
    try {
      await engine.load()
      notEvaluated = await engine.notEvaluated()
      if (notEvaluated.length > 0) this.logToStderr(notEvaluatedLine(notEvaluated, config.preset))
      const progress = this.startProgress('Scanning')
      const write = (text: string): void => progress.above(() => out.write(text))
      if (flags.json) write('[')
      const items = scanInputs(paths, config.settings.engine.limits.maxBytes, skipped)
      const closeArray = (): void => {
        progress.finish()
        if (flags.json && !closed) out.write(`${counts.safe + counts.unsafe + counts.errors > 0 ? '\n' : ''}]\n`)
      }
      try {
        for await (const item of inOrder(items, (inputs) => engine.moderateMany(inputs))) {
          if (closed || this.interrupt.signal.aborted) break
          if ('error' in item) counts.errors++
          else if (item.is_safe) counts.safe++
          else counts.unsafe++
          const n = counts.safe + counts.unsafe + counts.errors
          if (flags.json) write(`${n > 1 ? ',' : ''}\n${JSON.stringify(item)}`)
          else if (flags.ndjson) write(`${JSON.stringify(item)}\n`)
          else write(`${formatRow(item)}\n`)
          progress.update(`Scanning: ${summaryLine(counts)}`)
        }
      } finally {
        // stdout stays valid JSON whatever stops the scan; the failure itself goes to stderr.
        closeArray()
      }
    } finally {
      await engine.close()
    }
    if (closed || this.interrupt.signal.aborted) return
    const total = counts.safe + counts.unsafe + counts.errors
    const skips = skippedLine(skipped)
    if (total === 0) {
      throw new ModError('not_found', `nothing was scanned in ${paths.join(' ')}${skips ? `: ${skips}` : ': no images'}`)
    }
    if (!flags.json && !flags.ndjson) this.logToStderr(`${summaryLine(counts)}${skips ? `; ${skips}` : ''}`)
    else if (skips) this.logToStderr(skips)
    const code = counts.unsafe > 0 ? EXIT_VIOLATION : counts.errors > 0 || (flags.strict && notEvaluated.length > 0) ? EXIT_ERROR : EXIT_SAFE
    if (code !== EXIT_SAFE) this.exit(code)
  }
}

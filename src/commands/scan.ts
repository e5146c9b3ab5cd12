import {Args, Command, Flags} from '@oclif/core'

import {describeError, EXIT_ERROR, EXIT_SAFE, EXIT_VIOLATION} from '../cli/errors.js'
import {engineFromFlags} from '../cli/engine.js'
import {modelFlags} from '../cli/flags.js'
import {formatRow, summaryLine} from '../cli/format.js'
import {scanInputs} from '../cli/inputs.js'
import {startProgress} from '../cli/progress.js'

export default class Scan extends Command {
  static override description = `Moderate images: files, folders (recursively) or - for one image on stdin.

Formats: JPEG, PNG, WebP, GIF, AVIF, TIFF (animated GIF/WebP: up to 8 frames, each label keeps its maximum).
Exit codes: 0 all safe, 1 a violation was found, 2 usage, configuration or model error, or an input that could
not be scanned (it is reported as an error entry; the other inputs are still scored).`

  static override examples = [
    '<%= config.bin %> scan ./photos',
    '<%= config.bin %> scan ./uploads --json > report.json',
    'cat photo.jpg | <%= config.bin %> scan - --ndjson',
    '<%= config.bin %> scan ./photos --config policy.yaml --preset balanced',
  ]

  static override strict = false

  static override args = {
    paths: Args.string({description: 'files, folders or - (stdin)', required: true}),
  }

  static override flags = {
    json: Flags.boolean({description: 'Print one JSON array of results (streamed as they finish).', exclusive: ['ndjson']}),
    ndjson: Flags.boolean({description: 'Print one JSON result per line as each finishes.', exclusive: ['json']}),
    ...modelFlags,
  }

  async run(): Promise<void> {
    const {argv, flags} = await this.parse(Scan)
    const paths = argv as string[]
    let engine
    let config
    try {
      ;({engine, config} = await engineFromFlags(flags))
      await engine.load()
    } catch (e) {
      this.logToStderr(describeError(e))
      return this.exit(EXIT_ERROR)
    }

    const progress = startProgress('Scanning')
    const counts = {safe: 0, unsafe: 0, errors: 0}
    const out = process.stdout
    if (flags.json) out.write('[')
    try {
      for await (const item of engine.moderateMany(scanInputs(paths, config.settings.limits.maxBytes))) {
        if ('error' in item) counts.errors++
        else if (item.is_safe) counts.safe++
        else counts.unsafe++
        const n = counts.safe + counts.unsafe + counts.errors
        if (flags.json) out.write(`${n > 1 ? ',' : ''}\n${JSON.stringify(item)}`)
        else if (flags.ndjson) out.write(`${JSON.stringify(item)}\n`)
        else out.write(`${formatRow(item)}\n`)
        progress.update(`Scanning: ${summaryLine(counts)}`)
      }
    } catch (e) {
      await progress.finish()
      if (flags.json) out.write('\n]\n')
      this.logToStderr(describeError(e))
      return this.exit(EXIT_ERROR)
    } finally {
      await engine.close()
    }
    await progress.finish()
    if (flags.json) out.write(`${counts.safe + counts.unsafe + counts.errors > 0 ? '\n' : ''}]\n`)
    else if (!flags.ndjson) this.logToStderr(summaryLine(counts))
    const code = counts.unsafe > 0 ? EXIT_VIOLATION : counts.errors > 0 ? EXIT_ERROR : EXIT_SAFE
    if (code !== EXIT_SAFE) this.exit(code)
  }
}

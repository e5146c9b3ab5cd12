import {join} from 'node:path'

import {Args, Command} from '@oclif/core'

import {describeError, EXIT_ERROR} from '../../cli/errors.js'
import {modelFlags} from '../../cli/flags.js'
import {formatBytes} from '../../cli/format.js'
import {startProgress} from '../../cli/progress.js'
import {readSettings} from '../../lib/config/settings.js'
import {loadPresetManifest} from '../../lib/model/presets.js'
import {pullModel, type PulledFile, type PullProgress} from '../../lib/model/pull.js'
import {PRESETS, type PresetName} from '../../lib/policy/types.js'

const BAR_WIDTH = 24
/** Redraws of the progress bar per second at most: a chunk arrives every few kilobytes. */
const REDRAW_MS = 100

function bar(p: PullProgress): string {
  if (!p.total) return `${p.file} ${formatBytes(p.received)}`
  const done = Math.min(1, p.received / p.total)
  const filled = Math.round(done * BAR_WIDTH)
  return `${p.file} [${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}] ${Math.floor(done * 100)}% of ${formatBytes(p.total)}`
}

/** The line printed for a file the preset pins no hash for. */
export function firstUseWarning(f: PulledFile): string {
  return `warning: ${f.file} has no pinned sha256 in the preset; trusted on first use (sha256 ${f.sha256}, recorded in manifest.json)`
}

export default class ModelsPull extends Command {
  static override description = `Download a model preset into $MOD_CACHE_DIR/<preset> (default ~/.cache/mod/<preset>).

Every file is checked against the size and sha256 the preset gives and moved into place only when whole; the folder counts as installed once its manifest.json is written, last. An interrupted pull resumes where it stopped when run again; files already installed are not downloaded again.

A file the preset pins no sha256 for is trusted on first use: one warning line on stderr names it and the sha256 downloaded, which the installed manifest.json records (marked first_use; \`mod models list\` shows the counts).`

  static override examples = [
    '<%= config.bin %> models pull fast',
    'MOD_CACHE_DIR=/srv/mod <%= config.bin %> models pull accurate',
  ]

  static override args = {
    preset: Args.string({description: 'the preset to download', required: true, options: [...PRESETS]}),
  }

  static override flags = {
    'cache-dir': modelFlags['cache-dir'],
    precision: modelFlags.precision,
  }

  async run(): Promise<void> {
    const {args, flags} = await this.parse(ModelsPull)
    const preset = args.preset as PresetName
    const controller = new AbortController()
    const interrupt = (): void => controller.abort()
    process.once('SIGINT', interrupt)
    const tty = Boolean(process.stderr.isTTY)
    const progress = startProgress(`Pulling ${preset}`)
    let dir: string
    let unpinned: PulledFile[]
    try {
      const settings = readSettings(flags, process.env)
      dir = join(settings.cacheDir, preset)
      const manifest = await loadPresetManifest(preset)
      const variants = settings.precision === 'fp32' ? [] : [settings.precision]
      const count = manifest.files.length + variants.length * 2
      let done = 0
      let lastDraw = 0
      unpinned = []
      await pullModel(manifest, dir, {
        signal: controller.signal,
        variants,
        onProgress: (p) => {
          const now = Date.now()
          if (now - lastDraw < REDRAW_MS && p.received !== p.total) return
          lastDraw = now
          progress.update(`Pulling ${preset} (${manifest.id}) ${done + 1}/${count}: ${bar(p)}`)
        },
        onFile: (f) => {
          done++
          if (!f.pinned) unpinned.push(f)
          if (!tty) this.logToStderr(`${f.skipped ? 'kept   ' : 'fetched'} ${f.file} (${formatBytes(f.size)})`)
        },
      })
    } catch (e) {
      await progress.finish()
      this.logToStderr(describeError(e))
      return this.exit(EXIT_ERROR)
    } finally {
      process.off('SIGINT', interrupt)
    }
    await progress.finish()
    for (const f of unpinned) this.logToStderr(firstUseWarning(f))
    this.log(`${preset} is installed in ${dir}`)
  }
}

import {Command, Flags} from '@oclif/core'

import {describeError, EXIT_ERROR} from '../../cli/errors.js'
import {modelFlags} from '../../cli/flags.js'
import {formatBytes} from '../../cli/format.js'
import {readSettings} from '../../lib/config/settings.js'
import {listPresets, type PresetStatus} from '../../lib/model/presets.js'


export default class ModelsList extends Command {
  static override description = `List the model presets, their model, and whether each is installed in $MOD_CACHE_DIR.

The size is that of the installed files, or of the download for a preset not installed yet. For an installed preset,
VERIFIED counts the files checked against a sha256 the preset pins and FIRST USE those the preset pins no hash for,
whose hash was recorded when first downloaded (--json lists both by path: verified, trusted_on_first_use).`

  static override examples = ['<%= config.bin %> models list', '<%= config.bin %> models list --json']

  static override flags = {
    json: Flags.boolean({description: 'Print the listing as JSON.'}),
    'cache-dir': modelFlags['cache-dir'],
    'model-dir': modelFlags['model-dir'],
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(ModelsList)
    let presets: PresetStatus[]
    let settings
    try {
      settings = readSettings(flags, process.env)
      presets = await listPresets(settings.cacheDir)
    } catch (e) {
      this.logToStderr(describeError(e))
      return this.exit(EXIT_ERROR)
    }
    if (flags.json) {
      const listing = {
        cache_dir: settings.cacheDir,
        model_dir: settings.modelDir ?? null,
        presets: presets.map((p) => ({
          preset: p.preset,
          model: p.id,
          installed: p.installed,
          dir: p.dir,
          size: p.size ?? null,
          verified: p.trust?.pinned ?? null,
          trusted_on_first_use: p.trust?.firstUse ?? null,
        })),
      }
      this.log(JSON.stringify(listing, null, 2))
      return
    }
    const count = (files?: string[]): string => (files === undefined ? '-' : String(files.length))
    const rows = [
      ['PRESET', 'MODEL', 'INSTALLED', 'SIZE', 'VERIFIED', 'FIRST USE', 'FOLDER'],
      ...presets.map((p) => [
        p.preset,
        p.id,
        p.installed ? 'yes' : 'no',
        formatBytes(p.size),
        count(p.trust?.pinned),
        count(p.trust?.firstUse),
        p.dir,
      ]),
    ]
    const widths = rows[0].map((_, i) => rows.reduce((w, r) => Math.max(w, r[i].length), 0))
    for (const r of rows) this.log(r.map((cell, i) => cell.padEnd(widths[i])).join('  ').trimEnd())
    if (settings.modelDir) this.logToStderr(`MOD_MODEL_DIR is set: commands use the model in ${settings.modelDir}`)
  }
}

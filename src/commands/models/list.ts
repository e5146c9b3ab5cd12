import {ModCommand} from '../../cli/base-command.js'
import {modelFlags, settingsInput} from '../../cli/flags.js'
import {formatBytes} from '../../cli/format.js'
import {readSettings} from '../../lib/config/settings.js'
import {listPresets} from '../../lib/model/presets.js'

interface Listing {
  cache_dir: string
  model_dir: string | null
  presets: {preset: string; model: string; installed: boolean; dir: string; size: number | null; download_size: number | null}[]
}

export default class ModelsList extends ModCommand {
  static override description = `List the model presets, their model, and whether each is installed in the cache folder.

SIZE is that of the installed files, or of the download for a preset not installed yet; DOWNLOAD is what \`mod models pull\` fetches for the fp32 files.`

  static override examples = ['<%= config.bin %> models list', '<%= config.bin %> models list --json']

  static override enableJsonFlag = true

  static override flags = {
    'cache-dir': modelFlags['cache-dir'],
    'model-dir': modelFlags['model-dir'],
  }

  async run(): Promise<Listing> {
    const {flags} = await this.parse(ModelsList)
    const settings = readSettings(settingsInput(flags), process.env)
    const presets = await listPresets(settings.cacheDir)
    const rows = [
      ['PRESET', 'MODEL', 'INSTALLED', 'SIZE', 'DOWNLOAD', 'FOLDER'],
      ...presets.map((p) => [p.preset, p.id, p.installed ? 'yes' : 'no', formatBytes(p.size), formatBytes(p.download), p.dir]),
    ]
    const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)))
    for (const r of rows) this.log(r.map((cell, i) => cell.padEnd(widths[i])).join('  ').trimEnd())
    if (settings.modelDir) this.logToStderr(`MOD_MODEL_DIR is set: commands use the model in ${settings.modelDir}`)
    return {
      cache_dir: settings.cacheDir,
      model_dir: settings.modelDir ?? null,
      presets: presets.map((p) => ({
        preset: p.preset,
        model: p.id,
        installed: p.installed,
        dir: p.dir,
        size: p.size ?? null,
        download_size: p.download ?? null,
      })),
    }
  }
}

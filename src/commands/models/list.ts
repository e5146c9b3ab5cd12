import {ModCommand} from '../../cli/base-command.js'
import {SIGNAL_EXIT_CODES} from '../../cli/errors.js'
import {modelFlags, settingsInput} from '../../cli/flags.js'
import {formatBytes} from '../../cli/format.js'
import {readSettings} from '../../lib/config/settings.js'
import {listPresets} from '../../lib/model/presets.js'
import {ADDONS} from '../../lib/signals/registry.js'

interface Listing {
  cache_dir: string
  model_dir: string | null
  presets: {
    preset: string
    model: string
    installed: boolean
    dir: string
    size: number | null
    download_size: number | null
    verified: string[] | null
    trusted_on_first_use: string[] | null
  }[]
  addons: {
    name: string
    model: string
    kind: string
    licence: string
    installed: boolean
    dir: string
    size: number
    verified: boolean | null
  }[]
}

export default class ModelsList extends ModCommand {
  static override description = `List the model presets, their model, and whether each is installed in the cache folder.

SIZE is that of the installed files, or of the download for a preset not installed yet; DOWNLOAD is what \`mod models pull\` fetches for the fp32 files (unknown where the preset's manifest does not give every file's size). For an installed preset, VERIFIED counts the files checked against a sha256 the preset pins and FIRST USE those the preset pins no hash for, whose hash was recorded when first downloaded (--json lists both by path: verified, trusted_on_first_use).

A second table lists the add-ons, models you pull on purpose beside a preset (${ADDONS.map((a) => a.name).join(', ')}), with their kind and licence: nudenet is AGPL-3.0, which is why mod does not ship it.`

  static override examples = ['<%= config.bin %> models list', '<%= config.bin %> models list --json']

  static override enableJsonFlag = true

  static override exitCodes: [string, string][] = [
    ['0', 'the presets are listed'],
    ['2', 'usage or configuration error'],
    ...SIGNAL_EXIT_CODES,
  ]

  static override flags = {
    'cache-dir': modelFlags['cache-dir'],
    'model-dir': modelFlags['model-dir'],
  }

  async run(): Promise<Listing> {
    const {flags} = await this.parse(ModelsList)
    const settings = readSettings(settingsInput(flags), process.env).engine
    const presets = await listPresets(settings.cacheDir)
    const addons = await Promise.all(ADDONS.map((a) => a.status(settings.cacheDir)))
    const count = (files?: string[]): string => (files === undefined ? '-' : String(files.length))
    const bytes = (n?: number): string => (n === undefined ? 'unknown' : formatBytes(n))
    const rows = [
      ['PRESET', 'MODEL', 'INSTALLED', 'SIZE', 'DOWNLOAD', 'VERIFIED', 'FIRST USE', 'FOLDER'],
      ...presets.map((p) => [
        p.preset,
        p.id,
        p.installed ? 'yes' : 'no',
        bytes(p.size),
        bytes(p.download),
        count(p.trust?.pinned),
        count(p.trust?.firstUse),
        p.dir,
      ]),
    ]
    const addonRows = [
      ['ADD-ON', 'MODEL', 'KIND', 'LICENCE', 'INSTALLED', 'SIZE', 'VERIFIED', 'FOLDER'],
      ...addons.map((a) => [a.name, a.id, a.kind, a.licence, a.installed ? 'yes' : 'no', bytes(a.size), a.verified === undefined ? '-' : a.verified ? 'yes' : 'no', a.dir]),
    ]
    this.printTable(rows)
    this.log('')
    this.printTable(addonRows)
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
        verified: p.trust?.pinned ?? null,
        trusted_on_first_use: p.trust?.firstUse ?? null,
      })),
      addons: addons.map((a) => ({
        name: a.name,
        model: a.id,
        kind: a.kind,
        licence: a.licence,
        installed: a.installed,
        dir: a.dir,
        size: a.size,
        verified: a.verified ?? null,
      })),
    }
  }

  private printTable(rows: string[][]): void {
    const widths = rows[0].map((_, i) => rows.reduce((w, r) => Math.max(w, r[i].length), 0))
    for (const r of rows) this.log(r.map((cell, i) => cell.padEnd(widths[i])).join('  ').trimEnd())
  }
}

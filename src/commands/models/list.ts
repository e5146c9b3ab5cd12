import {ModCommand} from '../../cli/base-command.js'
import {SIGNAL_EXIT_CODES} from '../../cli/errors.js'
import {modelFlags, settingsInput} from '../../cli/flags.js'
import {formatBytes} from '../../cli/format.js'
import {chosenFormat, formatFlags} from '../../cli/output.js'
import {oneResultReporters, PLAIN_FORMATS} from '../../cli/reports/reporter.js'
import {checkModelDir} from '../../lib/config/load.js'
import {readSettings} from '../../lib/config/settings.js'
import {listPresets, type PresetStatus} from '../../lib/model/presets.js'
import {ADDONS} from '../../lib/signals/registry.js'
import type {AddonStatus} from '../../lib/signals/signal.js'

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

/** What the table shows of the listing: the presets' and the add-ons' status as read. */
interface Statuses {
  presets: PresetStatus[]
  addons: AddonStatus[]
}

function alignedRows(rows: string[][]): string[] {
  const widths = rows[0].map((_, i) => rows.reduce((w, r) => Math.max(w, r[i].length), 0))
  return rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i])).join('  ').trimEnd())
}

/** Two tables: the presets, a blank line, the add-ons. */
function modelsTable({presets, addons}: Statuses): string[] {
  const count = (files?: string[]): string => (files === undefined ? '-' : String(files.length))
  const bytes = (n?: number): string => (n === undefined ? 'unknown' : formatBytes(n))
  const presetRows = [
    ['PRESET', 'MODEL', 'INSTALLED', 'SIZE', 'DOWNLOAD', 'VERIFIED', 'FIRST USE', 'FOLDER'],
    ...presets.map((p) => [p.preset, p.id, p.installed ? 'yes' : 'no', bytes(p.size), bytes(p.download), count(p.trust?.pinned), count(p.trust?.firstUse), p.dir]),
  ]
  const addonRows = [
    ['ADD-ON', 'MODEL', 'KIND', 'LICENCE', 'INSTALLED', 'SIZE', 'VERIFIED', 'FOLDER'],
    ...addons.map((a) => [a.name, a.id, a.kind, a.licence, a.installed ? 'yes' : 'no', bytes(a.size), a.verified === undefined ? '-' : a.verified ? 'yes' : 'no', a.dir]),
  ]
  return [...alignedRows(presetRows), '', ...alignedRows(addonRows)]
}

/** The JSON listing: snake_case fields, null where unknown. */
function modelsListing({presets, addons}: Statuses, cacheDir: string, modelDir: string | undefined): Listing {
  return {
    cache_dir: cacheDir,
    model_dir: modelDir ?? null,
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

export default class ModelsList extends ModCommand {
  static override description = `List the model presets, their model, and whether each is installed in the cache folder.

SIZE is that of the installed files, or of the download for a preset not installed yet; DOWNLOAD is what \`mod models pull\` fetches for the fp32 files (unknown where the preset's manifest does not give every file's size). For an installed preset, VERIFIED counts the files checked against a sha256 the preset pins and FIRST USE those the preset pins no hash for, whose hash was recorded when first downloaded (--format json lists both by path: verified, trusted_on_first_use).

A second table lists the add-ons, models you pull on purpose beside a preset (${ADDONS.map((a) => a.name).join(', ')}), with their kind and licence: nudenet is AGPL-3.0, which is why mod does not ship it.`

  static override examples = ['<%= config.bin %> models list', '<%= config.bin %> models list --json']

  static override exitCodes: [string, string][] = [
    ['0', 'the presets are listed'],
    ['2', 'usage or configuration error (a model folder set that holds no model); stdout could not be written (a full disk)'],
    ...SIGNAL_EXIT_CODES,
  ]

  static override flags = {
    ...formatFlags(PLAIN_FORMATS, 'table (default), json (cache_dir, model_dir, presets, addons) or ndjson (the same on one line).'),
    'cache-dir': modelFlags['cache-dir'],
    'model-dir': modelFlags['model-dir'],
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(ModelsList)
    const settings = readSettings(settingsInput(flags), process.env).engine
    const statuses: Statuses = {presets: await listPresets(settings.cacheDir), addons: await Promise.all(ADDONS.map((a) => a.status(settings.cacheDir)))}
    const reporters = oneResultReporters(modelsTable, (s: Statuses) => modelsListing(s, settings.cacheDir, settings.modelDir))
    this.printResult(reporters[chosenFormat(flags)](), statuses)
    if (settings.modelDir === undefined) return
    // A folder every other command would refuse is the listing's error too, not a line saying it is used.
    await checkModelDir(settings.modelDir)
    this.logToStderr(`A model folder is set (MOD_MODEL_DIR, --model-dir): commands use the model in ${settings.modelDir}`)
  }
}

import {join} from 'node:path'

import {Args} from '@oclif/core'

import {ModCommand} from '../../cli/base-command.js'
import {textReporter} from '../../cli/reports/reporter.js'
import {visible} from '../../cli/visible.js'
import {SIGNAL_EXIT_CODES} from '../../cli/errors.js'
import {modelFlags, settingsInput} from '../../cli/flags.js'
import {formatBytes} from '../../cli/format.js'
import {runSteps} from '../../cli/steps.js'
import {readSettings} from '../../lib/config/settings.js'
import {addModelFile} from '../../lib/model/add.js'
import type {PulledFile} from '../../lib/model/pull.js'
import {PRESETS} from '../../lib/policy/types.js'
import {ADDONS} from '../../lib/signals/registry.js'

export default class ModelsAdd extends ModCommand {
  static override description = `Install an add-on from a copy of its file you already have, where it cannot be downloaded (no network, a proxy that refuses GitHub).

${ADDONS.map((a) => a.addHelp).join('\n\n')}`

  static override examples = ['<%= config.bin %> models add nudenet ./320n.onnx', '$ MOD_CACHE_DIR=/srv/mod <%= config.bin %> models add nudenet /media/usb/320n.onnx']

  static override exitCodes: [string, string][] = [
    ['0', 'installed and verified'],
    ['2', 'usage error (an unknown add-on); the file does not exist, or is not the pinned file (its size or sha256 differs)'],
    ...SIGNAL_EXIT_CODES,
  ]

  static override args = {
    addon: Args.string({description: `the add-on: ${ADDONS.map((a) => a.name).join(', ')}`, required: true}),
    file: Args.string({description: "a copy of the add-on's file", required: true}),
  }

  static override flags = {
    'cache-dir': modelFlags['cache-dir'],
  }

  async run(): Promise<void> {
    const {args, flags} = await this.parse(ModelsAdd)
    const addon = ADDONS.find((a) => a.name === args.addon)
    if (addon === undefined) {
      const preset = (PRESETS as readonly string[]).includes(args.addon)
      this.error(
        preset
          ? `${args.addon} is a CLIP preset of several files: \`mod models pull ${args.addon}\` downloads it; offline, copy an installed folder into the cache or point --model-dir at one`
          : `${args.addon} is not an add-on; the add-ons are: ${ADDONS.map((a) => a.name).join(', ')}`,
        {exit: 2},
      )
    }
    const settings = readSettings(settingsInput(flags), process.env).engine
    const dir = join(settings.cacheDir, addon.name)
    const manifest = await addon.manifest()
    if (addon.notice) this.logToStderr(addon.notice)
    const name = manifest.files[0].path
    const title = `${name} from ${args.file}`
    let added: PulledFile | undefined
    await runSteps([
      {
        title,
        run: async (retitle) => {
          const {file} = await addModelFile(manifest, args.file, dir, {
            signal: this.interrupt.signal,
            onProgress: (copied, total) => retitle(`${title}: ${formatBytes(copied)} of ${formatBytes(total)} copied and hashed`),
          }).catch((e: unknown) => {
            retitle(title)
            throw e
          })
          added = file
          retitle(`${name} copied and verified (sha256 ${file.sha256})`)
        },
      },
    ])
    const file = added as PulledFile
    this.printResult(textReporter(), `${addon.name} is installed in ${visible(dir)}: ${file.file} (${formatBytes(file.size)}) matches the pinned sha256 ${file.sha256}\n`)
  }
}

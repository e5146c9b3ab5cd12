import {join} from 'node:path'

import {Args} from '@oclif/core'

import {ModCommand} from '../../cli/base-command.js'
import {SIGNAL_EXIT_CODES} from '../../cli/errors.js'
import {modelFlags, settingsInput} from '../../cli/flags.js'
import {formatBytes} from '../../cli/format.js'
import {textReporter} from '../../cli/reports/reporter.js'
import {visible} from '../../cli/visible.js'
import {readSettings} from '../../lib/config/settings.js'
import {removeModel} from '../../lib/model/remove.js'
import {PRESETS} from '../../lib/policy/types.js'
import {ADDONS} from '../../lib/signals/registry.js'

export default class ModelsRemove extends ModCommand {
  static override description = `Remove a preset or add-on installed in the cache, and what mod derived from it there.

Deletes <cache-dir>/<preset> (the folder models pull and models add install into, a part of an interrupted pull
included) with the optimised graphs, signed int8 copies and prompt embeddings kept for its files in the cache. It
waits for nothing: a pull or add running into the folder makes it fail, naming that process. A server or scan
running on the model keeps what it has loaded; the next one to start does not find the model. A folder given by
--model-dir or MOD_MODEL_DIR is yours, and never removed, nor is the folder a link in the cache names (the link is).
A preset that is not installed is said so, exit 0.`

  static override examples = ['<%= config.bin %> models remove fast', '<%= config.bin %> models remove nudenet', '$ MOD_CACHE_DIR=/srv/mod <%= config.bin %> models remove accurate']

  static override exitCodes: [string, string][] = [
    ['0', 'removed, or not installed'],
    ['2', 'usage or configuration error; a pull or add is installing into the folder; the folder could not be deleted'],
    ...SIGNAL_EXIT_CODES,
  ]

  static override args = {
    preset: Args.string({description: 'the preset (or add-on) to remove', required: true, options: [...PRESETS, ...ADDONS.map((a) => a.name)]}),
  }

  static override flags = {
    'cache-dir': modelFlags['cache-dir'],
  }

  async run(): Promise<void> {
    const {args, flags} = await this.parse(ModelsRemove)
    const {cacheDir} = readSettings(settingsInput(flags), process.env).engine
    const dir = join(cacheDir, args.preset)
    const removed = await removeModel(dir, args.preset, cacheDir)
    const line =
      removed === undefined
        ? `${args.preset} is not installed in ${visible(dir)}: nothing to remove\n`
        : removed.linkedTo !== undefined
          ? `${args.preset}: the link ${visible(dir)} is removed; the folder it named, ${visible(removed.linkedTo)}, is kept\n`
          : `${args.preset}${removed.id ? ` (${removed.id})` : ''} removed from ${visible(dir)}: ${formatBytes(removed.bytes)} freed\n`
    this.printResult(textReporter(), line)
  }
}

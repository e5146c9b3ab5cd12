import {Command, Flags} from '@oclif/core'

import {describeError, EXIT_ERROR} from '../cli/errors.js'
import {engineFromFlags} from '../cli/engine.js'
import {modelFlags} from '../cli/flags.js'

export default class Categories extends Command {
  static override description = 'List the active categories: built-in, custom (policy file) and head labels, with parents and thresholds.'

  static override examples = ['<%= config.bin %> categories', '<%= config.bin %> categories --json --config policy.yaml']

  static override flags = {
    json: Flags.boolean({description: 'Print the listing as JSON (the shape of GET /v1/categories).'}),
    ...modelFlags,
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(Categories)
    let listing
    try {
      const {engine} = await engineFromFlags(flags)
      listing = await engine.categories()
    } catch (e) {
      this.logToStderr(describeError(e))
      return this.exit(EXIT_ERROR)
    }
    if (flags.json) {
      this.log(JSON.stringify(listing, null, 2))
      return
    }
    this.log(`preset ${listing.preset}, model ${listing.model}`)
    const width = listing.categories.reduce((w, c) => Math.max(w, c.name.length), 4)
    for (const c of listing.categories) {
      const parent = c.parent ? `parent ${c.parent}` : ''
      this.log(`${c.name.padEnd(width)}  threshold ${c.threshold.toFixed(2)}  ${c.origin.padEnd(7)}  ${parent}`.trimEnd())
    }
  }
}

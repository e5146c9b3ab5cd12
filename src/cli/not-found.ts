import {toConfiguredId, type Hook} from '@oclif/core'

import {nearest} from '../lib/suggest.js'

/**
 * A mistyped command: one line with the closest command ("did you mean"), exit 2. Never a prompt and never
 * running the guess: a script or CI job with a terminal attached must not run a command nobody typed.
 * oclif joins the words it could not match (`scna photos` arrives as `scna:photos`), so each leading run of
 * words is tried as the command, the rest kept as its arguments; the nearest match wins.
 */
const hook: Hook.CommandNotFound = async function (opts) {
  const ids = opts.config.commands.filter((c) => !c.hidden).map((c) => c.id)
  const words = opts.id.split(':')
  let best: {guess: string; d: number} | undefined
  for (let n = 1; n <= words.length; n++) {
    const command = nearest(words.slice(0, n).join(':'), ids)
    if (command && (best === undefined || command.d <= best.d)) {
      best = {guess: [toConfiguredId(command.word, opts.config), ...words.slice(n)].join(' '), d: command.d}
    }
  }
  const guess = best?.guess
  const typed = toConfiguredId(opts.id, opts.config)
  this.error(`${typed} is not a ${opts.config.bin} command${guess ? `; did you mean \`${opts.config.bin} ${guess}\`?` : ''} (\`${opts.config.bin} help\` lists them)`, {exit: 2})
}

export default hook

import {toConfiguredId, type Hook} from '@oclif/core'

/** Edit distance between two command ids (insertions, deletions, substitutions). */
export function distance(a: string, b: string): number {
  let previous = Array.from({length: b.length + 1}, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1))
    }
    previous = row
  }
  return previous[b.length]
}

/**
 * A mistyped command: one line with the closest command ("did you mean"), exit 2. Never a prompt and never
 * running the guess: a script or CI job with a terminal attached must not run a command nobody typed.
 */
const hook: Hook.CommandNotFound = async function (opts) {
  const ids = opts.config.commands.filter((c) => !c.hidden).map((c) => c.id)
  const typed = toConfiguredId(opts.id, opts.config)
  const best = ids
    .map((id) => ({id, d: distance(opts.id, id)}))
    .sort((x, y) => x.d - y.d || x.id.localeCompare(y.id))[0]
  // A guess further than half the typed word away is noise rather than a typo.
  const guess = best && best.d <= Math.max(2, Math.floor(opts.id.length / 2)) ? toConfiguredId(best.id, opts.config) : undefined
  this.error(`${typed} is not a ${opts.config.bin} command${guess ? `; did you mean \`${opts.config.bin} ${guess}\`?` : ''} (\`${opts.config.bin} help\` lists them)`, {exit: 2})
}

export default hook

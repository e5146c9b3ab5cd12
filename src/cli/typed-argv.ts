/** The part of a flag's definition that says how it is typed on the command line. */
export interface TypedFlag {
  type?: string
  char?: string
  charAliases?: readonly (string | undefined)[]
  aliases?: readonly string[]
}

/** What was typed for each flag that takes a value, and the words that are arguments, in order. */
export interface TypedArgv {
  flags: {name: string; input: string}[]
  args: string[]
}

/**
 * argv read the way oclif reads it: `--name value`, `--name=value`, `-c value` and `-cvalue` give a flag its value,
 * a flag without a value (a boolean) takes none, and after `--` every word is an argument. Every repeatable flag of
 * mod takes one value per use, so the words after it stay arguments. Words oclif does not know as flags are neither.
 */
export function readTyped(argv: readonly string[], flags: Readonly<Record<string, TypedFlag>>): TypedArgv {
  const byToken = new Map<string, string>()
  for (const [name, flag] of Object.entries(flags)) {
    for (const long of [name, ...(flag.aliases ?? [])]) byToken.set(`--${long}`, name)
    for (const char of [flag.char, ...(flag.charAliases ?? [])]) if (char) byToken.set(`-${char}`, name)
  }
  const typed: TypedArgv = {flags: [], args: []}
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]
    if (token === '--') {
      typed.args.push(...argv.slice(i + 1))
      break
    }
    if (!token.startsWith('-') || token === '-' || /^-\d/.test(token)) {
      typed.args.push(token)
      continue
    }
    const long = token.startsWith('--')
    const key = long ? token.split('=')[0] : token.slice(0, 2)
    const name = byToken.get(key)
    if (name === undefined || flags[name].type !== 'option') continue
    const attached = token.length > key.length ? token.slice(key.length).replace(/^=/, '') : undefined
    const input = attached ?? argv[++i]
    if (input !== undefined) typed.flags.push({name, input})
  }
  return typed
}

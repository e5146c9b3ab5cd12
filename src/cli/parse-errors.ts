import {Errors} from '@oclif/core'

import {closest} from '../lib/suggest.js'
import {oneLine} from './errors.js'
import {readTyped, type TypedFlag} from './typed-argv.js'
import {InvalidFlagValue} from './value-flags.js'

/** What the usage line needs of a flag's definition. */
export interface FlagShape extends TypedFlag {
  options?: readonly string[]
  env?: string
}

/** What the usage line needs of an argument's definition. */
export interface ArgShape {
  options?: readonly string[]
  required?: boolean
  multiple?: boolean
  description?: string
}

/** The command whose command line oclif refused: its flags (with the base's), its arguments, what it was given. */
export interface ParsedCommand {
  bin: string
  /** The command's words (`models pull`). */
  id: string
  flags: Readonly<Record<string, FlagShape>>
  args: Readonly<Record<string, ArgShape>>
  strict: boolean
  argv: readonly string[]
  env: Readonly<Record<string, string | undefined>>
}

/** A value refused for not being one of a fixed list, and the variable it came from when it was not typed. */
interface Refused {
  input: string
  options: readonly string[]
  flag?: string
  variable?: string
}

/**
 * oclif's parser error classes (@oclif/core lib/parser/errors.d.ts) are not among the package's exports, so they
 * are told apart by class name; what each carries (the unknown flags, the missing arguments) is read from its
 * fields. The choice errors carry no fields: the refused value is found from the command's definitions and argv.
 */
type ParseErrorClass = 'NonExistentFlagsError' | 'FlagInvalidOptionError' | 'ArgInvalidOptionError' | 'RequiredArgsError'

function isParseError(e: Error, name: ParseErrorClass): boolean {
  return e.constructor.name === name
}

/** A command's own check that an argument is missing (one that oclif cannot see: scan's paths, or --files-from). */
export class MissingArgumentError extends Errors.CLIError {}

/**
 * The one stderr line for a command line oclif refused, with a "did you mean" where something near was meant: the
 * nearest flag to an unknown one, the nearest allowed value to one that is not. A flag's value that came from its
 * MOD_* variable is a configuration problem, and the line names the variable.
 */
export function usageLine(e: Error, command: ParsedCommand): string {
  if (e instanceof MissingArgumentError || isParseError(e, 'RequiredArgsError')) return missingArgs(command)
  const message = oneLine(e.message)
  if (isParseError(e, 'NonExistentFlagsError')) return `mod: usage: ${message}${unknownFlagsHint((e as Error & {flags: string[]}).flags, command)}`
  const refused = isParseError(e, 'FlagInvalidOptionError')
    ? refusedFlagValue(command)
    : isParseError(e, 'ArgInvalidOptionError')
      ? refusedArgValue(command)
      : undefined
  if (refused === undefined && e instanceof InvalidFlagValue) return invalidValue(e, message, command)
  if (refused === undefined) return fromVariable(message, command) ?? `mod: usage: ${message}`
  const guess = closest(refused.input, refused.options)
  const hint = guess ? `; did you mean ${guess}?` : ''
  if (refused.variable === undefined) return `mod: usage: ${message}${hint}`
  return `mod: invalid_config: ${refused.variable}=${JSON.stringify(refused.input)} is not valid: expected one of: ${refused.options.join(', ')}${hint}`
}

/** `; did you mean --json?` for the unknown flags (as typed: `--jsn`, `--jsn=1`) that have a near one. */
function unknownFlagsHint(flags: readonly string[], command: ParsedCommand): string {
  const names = [...Object.keys(command.flags), 'help']
  const guesses = flags.flatMap((f) => {
    const guess = closest(f.replace(/^-+/, '').split('=')[0], names)
    return guess ? [`--${guess}`] : []
  })
  return guesses.length > 0 ? `; did you mean ${guesses.join(', ')}?` : ''
}

/** The first value of a flag with a fixed list that is not on its list: typed, else from the flag's variable. */
function refusedFlagValue(command: ParsedCommand): Refused | undefined {
  const typed = readTyped(command.argv, command.flags).flags
  for (const {name, input} of typed) {
    const {options} = command.flags[name]
    if (options && !options.includes(input)) return {input, options, flag: name}
  }
  for (const [name, {env, options}] of Object.entries(command.flags)) {
    const value = env === undefined ? undefined : command.env[env]
    if (options && value && !options.includes(value) && !typed.some((t) => t.name === name)) return {input: value, options, flag: name, variable: env}
  }
  return undefined
}

/** The first argument with a fixed list whose word is not on it (a repeatable argument takes the words left). */
function refusedArgValue(command: ParsedCommand): Refused | undefined {
  const words = readTyped(command.argv, command.flags).args
  let at = 0
  for (const arg of Object.values(command.args)) {
    const mine = arg.multiple ? words.slice(at) : words.slice(at, at + 1)
    at += mine.length
    const input = mine.find((w) => arg.options && !arg.options.includes(w))
    if (input !== undefined && arg.options) return {input, options: arg.options}
  }
  return undefined
}

/**
 * A flag's value that oclif could not read and that came from the flag's MOD_* variable (oclif names the flag,
 * `Parsing --threads`, and the value was not typed): the line names the variable and its value instead.
 */
function fromVariable(message: string, command: ParsedCommand): string | undefined {
  const name = /^--([\w-]+):/.exec(message)?.[1]
  const variable = name === undefined ? undefined : command.flags[name]?.env
  if (variable === undefined || !command.env[variable]) return undefined
  if (readTyped(command.argv, command.flags).flags.some((t) => t.name === name)) return undefined
  return `mod: invalid_config: ${variable}=${JSON.stringify(command.env[variable])} is not valid: ${message.replace(/^--[\w-]+:\s*/, '')}`
}

/**
 * A value a flag's own reader refused: `--port="abc" is not valid: expected …` when typed (a usage error), else
 * the same words with the MOD_* variable it came from (a configuration error), as the settings say it of any variable.
 */
function invalidValue(e: InvalidFlagValue, message: string, command: ParsedCommand): string {
  const name = /^--([\w-]+):/.exec(message)?.[1] ?? ''
  const variable = command.flags[name]?.env
  const typed = readTyped(command.argv, command.flags).flags.some((t) => t.name === name)
  const said = `${JSON.stringify(e.input)} is not valid: expected ${e.expected}`
  return variable === undefined || typed ? `mod: usage: --${name}=${said}` : `mod: invalid_config: ${variable}=${said}`
}

/**
 * oclif's message for a missing argument lists it, then explains that flags taking several values must come
 * after the arguments, which mod's flags do not require (each takes one value per use): say what is missing.
 */
function missingArgs(command: ParsedCommand): string {
  const {bin, id} = command
  // A command whose argument is optional but not alone optional (scan: paths, or --files-from) names it too.
  const required = Object.entries(command.args).filter(([, a]) => a.required)
  const args = required.length > 0 ? required : Object.entries(command.args)
  const usage = args.map(([name, a]) => `<${name}${command.strict ? '' : '...'}>${a.options ? ` (${a.options.join('|')})` : ''}`).join(' ')
  const what = args.map(([, a]) => a.description ?? '').join('; ')
  return `mod: usage: ${bin} ${id} needs ${usage}${what ? `: ${what}` : ''}; see ${bin} ${id} --help`
}

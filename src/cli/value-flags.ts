import {Errors, Flags} from '@oclif/core'

import {countOf, HOST_FORM, hostOf, SIZE_RANGE, sizeOf, wholeRange} from '../lib/config/env.js'

/**
 * A flag's value that its reader refused, with what the flag accepts: the one line for it (parse-errors.ts) names
 * the flag or, when the value came from there, its MOD_* variable, in the words the settings use for every variable
 * (`MOD_PORT="abc" is not valid: expected a whole number from 0 to 65535`).
 */
export class InvalidFlagValue extends Errors.CLIError {
  constructor(
    readonly input: string,
    readonly expected: string,
  ) {
    super(`expected ${expected}`)
  }
}

/**
 * A whole number in plain decimal from min to max (spaces around it ignored: a variable written `MOD_THREADS=" 4 "`
 * in a unit file or an env file means 4, as every other MOD_* variable's spaces are ignored); `1e3`, `0x10`, `1.5`
 * and a number past max are refused in the words a MOD_* variable without a flag is refused in.
 */
export const wholeNumberFlag = Flags.custom<number, {min?: number; max?: number}>({
  parse: async (input, _context, opts) => {
    const n = countOf(input, opts.min ?? 0, opts.max)
    if (n === undefined) throw new InvalidFlagValue(input, wholeRange(opts.min ?? 0, opts.max))
    return n
  },
})

/** A size (`8KB`, `8192`), checked as MOD_* sizes are and handed on as written. */
export const sizeFlag = Flags.custom<string>({
  parse: async (input) => {
    if (sizeOf(input) === undefined) throw new InvalidFlagValue(input, SIZE_RANGE)
    return input
  },
})

/** A host to listen on, checked as MOD_HOST is (spaces around it dropped). */
export const hostFlag = Flags.custom<string>({
  parse: async (input) => {
    const host = hostOf(input)
    if (host === undefined) throw new InvalidFlagValue(input, HOST_FORM)
    return host
  },
})

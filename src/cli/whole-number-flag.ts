import {Flags} from '@oclif/core'

const integer = Flags.integer()

/**
 * oclif's integer flag, reading its value with surrounding spaces removed: a variable written `MOD_THREADS=" 4 "`
 * in a unit file or an env file means 4, as every other MOD_* variable's spaces are ignored.
 */
export const wholeNumberFlag = Flags.custom<number, {min?: number; max?: number}>({
  parse: (input, context, opts) => integer.parse(input.trim(), context, opts),
})

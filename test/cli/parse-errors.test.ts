// The "did you mean" of a refused command line comes from what oclif's errors carry and the command's own
// definitions, never from oclif's wording: these tests reword oclif's real errors and expect the same hint.
import {Args, Flags, Parser} from '@oclif/core'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {MissingArgumentError, usageLine, type ParsedCommand} from '../../src/cli/parse-errors.js'
import {readTyped} from '../../src/cli/typed-argv.js'

const flags = {
  json: Flags.boolean(),
  format: Flags.string({options: ['table', 'json', 'ndjson'], char: 'f'}),
  preset: Flags.string({options: ['fast', 'balanced', 'accurate'], env: 'MOD_PRESET'}),
  exclude: Flags.string({multiple: true, multipleNonGreedy: true}),
}
const args = {preset: Args.string({options: ['fast', 'balanced', 'accurate'], description: 'the preset to download'})}

function command(argv: string[], env: Record<string, string> = {}): ParsedCommand {
  return {bin: 'mod', id: 'models pull', flags, args, strict: true, argv, env}
}

/** The error oclif's own parser raises for argv (with env as the process's environment), its message reworded. */
async function reworded(argv: string[], env: Record<string, string> = {}): Promise<Error> {
  const saved = {...process.env}
  Object.assign(process.env, env)
  try {
    await Parser.parse(argv, {flags, args, strict: true})
  } catch (e) {
    ;(e as Error).message = 'Etwas stimmt nicht'
    return e as Error
  } finally {
    for (const k of Object.keys(env)) {
      if (saved[k] === undefined) delete process.env[k]
      else process.env[k] = saved[k]
    }
  }
  throw new Error(`oclif accepted ${argv.join(' ')}`)
}

test('an unknown flag gets the nearest flag from the error\'s own list, whatever oclif calls it', async () => {
  const argv = ['fast', '--jsn', '--formt=json', '--zzzzzzzz']
  assert.is(usageLine(await reworded(argv), command(argv)), 'mod: usage: Etwas stimmt nicht; did you mean --json, --format?')
  assert.is(usageLine(await reworded(['--zzzzzzzz']), command(['--zzzzzzzz'])), 'mod: usage: Etwas stimmt nicht')
})

test('a refused flag value gets the nearest allowed value, read from the flag and the command line', async () => {
  for (const argv of [['--format', 'jsn'], ['--format=jsn'], ['-f', 'jsn'], ['-fjsn'], ['--exclude', 'x', '--format', 'jsn']]) {
    assert.is(usageLine(await reworded(argv), command(argv)), 'mod: usage: Etwas stimmt nicht; did you mean json?', argv.join(' '))
  }
  assert.is(usageLine(await reworded(['--format', 'qqqqqq']), command(['--format', 'qqqqqq'])), 'mod: usage: Etwas stimmt nicht')
})

test("a refused value from the flag's variable names the variable, its value and the allowed ones", async () => {
  const env = {MOD_PRESET: 'fastest'}
  assert.is(usageLine(await reworded([], env), command([], env)), 'mod: invalid_config: MOD_PRESET="fastest" is not valid: expected one of: fast, balanced, accurate; did you mean fast?')
  // A typed value wins over the variable, so the line is about what was typed.
  const typed = ['--preset', 'acurate']
  assert.is(usageLine(await reworded(typed, env), command(typed, env)), 'mod: usage: Etwas stimmt nicht; did you mean accurate?')
})

test('a refused argument gets the nearest allowed value; a flag\'s value before it is not taken for it', async () => {
  const argv = ['--format', 'json', 'fst']
  assert.is(usageLine(await reworded(argv), command(argv)), 'mod: usage: Etwas stimmt nicht; did you mean fast?')
})

test('a missing argument, from oclif or from the command itself, says what is missing', async () => {
  const required = {...command([]), args: {preset: {...args.preset, required: true}}}
  const expected = 'mod: usage: mod models pull needs <preset> (fast|balanced|accurate): the preset to download; see mod models pull --help'
  try {
    await Parser.parse([], {flags, args: required.args, strict: true})
    assert.unreachable('oclif accepted a missing argument')
  } catch (e) {
    ;(e as Error).message = 'Etwas fehlt'
    assert.is(usageLine(e as Error, required), expected)
  }
  assert.is(usageLine(new MissingArgumentError('anything'), required), expected)
})

test('readTyped reads values the way oclif does, and every word after -- is an argument', () => {
  const typed = readTyped(['a', '--format', 'json', '--json', 'b', '-f=table', '--exclude=x', '-5', '--', '--format', 'c'], flags)
  assert.equal(typed.flags, [{name: 'format', input: 'json'}, {name: 'format', input: 'table'}, {name: 'exclude', input: 'x'}])
  assert.equal(typed.args, ['a', 'b', '-5', '--format', 'c'])
})

test.run()

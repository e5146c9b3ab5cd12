import {CommandHelp, Help} from '@oclif/core'

import {EXIT_CODES} from './errors.js'

/** [variable, what it sets] pairs a command lists in `--help` for the MOD_* variables that have no flag. */
export type EnvVars = [string, string][]

interface ModHelpCommand {
  envVars?: EnvVars
  exitCodes?: [string, string][]
}

/**
 * A description with each paragraph on one line, for wrap() to fit to the terminal: a line break inside a
 * sentence of the source would stay, ragged, at every width. A line of a list (`- `), an indented one and a blank
 * one keep their own.
 */
export function reflow(text: string): string {
  const lines: string[] = []
  for (const line of text.split('\n')) {
    const last = lines.length - 1
    if (last >= 0 && lines[last] !== '' && line.trim() !== '' && !/^(\s|- )/.test(line)) lines[last] += ` ${line}`
    else lines.push(line)
  }
  return lines.join('\n')
}

/**
 * Adds ENVIRONMENT VARIABLES (a command's `static envVars`) and EXIT CODES sections to every command's help; a
 * command with a `summary` shows it once, at the top, and its description without it.
 */
class ModCommandHelp extends CommandHelp {
  protected override description(): string | undefined {
    const {description} = this.command
    return description ? this.wrap(reflow(description)) : super.description()
  }

  protected override sections(): ReturnType<CommandHelp['sections']> {
    const cmd = this.command as unknown as ModHelpCommand
    return [
      ...super.sections(),
      {header: 'ENVIRONMENT VARIABLES', generate: (_data, header) => (cmd.envVars?.length ? {header, body: cmd.envVars} : undefined)},
      {header: 'EXIT CODES', generate: (_data, header) => ({header, body: cmd.exitCodes ?? EXIT_CODES})},
    ]
  }
}

export default class ModHelp extends Help {
  protected override CommandHelpClass = ModCommandHelp
}

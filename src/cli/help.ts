import {CommandHelp, Help} from '@oclif/core'

import {EXIT_CODES} from './errors.js'

/** [variable, what it sets] pairs a command lists in `--help` for the MOD_* variables that have no flag. */
export type EnvVars = [string, string][]

interface ModHelpCommand {
  envVars?: EnvVars
  exitCodes?: [string, string][]
}

/**
 * Adds ENVIRONMENT VARIABLES (a command's `static envVars`) and EXIT CODES sections to every command's help; a
 * command with a `summary` shows it once, at the top, and its description without it.
 */
class ModCommandHelp extends CommandHelp {
  protected override description(): string | undefined {
    const {summary, description} = this.command
    return summary && description ? this.wrap(description) : super.description()
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

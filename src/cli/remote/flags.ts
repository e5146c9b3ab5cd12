import {Errors, Flags} from '@oclif/core'

import {MAX_TIMER_MS} from '../../lib/config/env.js'
import {CLIENT_VARIABLES} from '../../lib/config/settings.js'
import {wholeNumberFlag} from '../value-flags.js'

const SERVER = 'SERVER'

/** The flags of a remote run: where the server is, its key, and how hard to push and retry. */
export const serverFlags = {
  server: Flags.string({
    description: 'Score on this mod serve (its model and policy).',
    helpValue: 'URL',
    env: CLIENT_VARIABLES.server,
    helpGroup: SERVER,
  }),
  'api-key': Flags.string({description: "The server's key (a flag shows in ps).", helpValue: 'KEY', env: CLIENT_VARIABLES.apiKey, helpGroup: SERVER}),
  retries: wholeNumberFlag({
    description: 'Retries of a failed request (with --server).',
    helpValue: 'N',
    min: 0,
    max: 100,
    default: 8,
    helpGroup: SERVER,
  }),
  // The run's deadline is a timer, which fires at once past MAX_TIMER_MS: 3000000 s stopped the run at its start.
  timeout: wholeNumberFlag({
    description: 'Stop the run after S seconds, exit 2 (with --server).',
    helpValue: 'S',
    min: 1,
    max: Math.floor(MAX_TIMER_MS / 1000),
    helpGroup: SERVER,
  }),
}

/** The flags of a remote run over many images (mod scan). */
export const batchFlags = {
  concurrency: wholeNumberFlag({description: 'Batch requests in flight (with --server).', helpValue: 'N', min: 1, max: 64, default: 4, helpGroup: SERVER}),
  resume: Flags.string({
    description: 'Journal the finished inputs; a rerun sends the rest.',
    helpValue: 'FILE',
    helpGroup: SERVER,
  }),
}

/** Flags that choose the model or change the policy: a remote run scores with the server's. */
const LOCAL_ONLY = ['preset', 'model-dir', 'cache-dir', 'config', 'head', 'precision', 'threads', 'threshold', 'disable', 'only'] as const

/** Flags that only a remote run reads: how to reach the server, how hard to push, when to give up. */
const REMOTE_ONLY = ['api-key', 'retries', 'timeout', 'concurrency', 'resume'] as const

/** The names among `names` that the command line gives as flags (`--name` or `--name=value`). */
function givenFlags(argv: readonly string[], names: readonly string[]): string[] {
  return names.filter((name) => argv.some((a) => a === `--${name}` || a.startsWith(`--${name}=`)))
}

/**
 * Without --server (or MOD_SERVER), a flag of the command line that only a remote run reads is a usage error: it
 * would do nothing, and `--timeout 60` on a local scan would look like a bound that is not there. MOD_API_KEY
 * alone is no such flag: the same variable may be set for the server itself.
 */
export function refuseRemoteFlags(argv: readonly string[], command: string): void {
  const given = givenFlags(argv, REMOTE_ONLY)
  if (given.length === 0) return
  const list = given.map((n) => `--${n}`).join(', ')
  throw new Errors.CLIError(`${list} ${given.length === 1 ? 'applies' : 'apply'} to a scan on a server only: add --server URL (or set MOD_SERVER), or leave ${given.length === 1 ? 'it' : 'them'} out to scan here (mod ${command} --help)`)
}

/**
 * With --server, a flag of the command line that only a local model could honour is a usage error naming why;
 * the same settings from MOD_* variables are ignored (a CI runner may set them for other steps).
 */
export function refuseLocalFlags(argv: readonly string[]): void {
  const given = givenFlags(argv, LOCAL_ONLY)
  if (given.length === 0) return
  throw new Errors.CLIError(
    `${given.map((n) => `--${n}`).join(', ')} cannot be used with --server: the server scores with its own model and policy (the first stderr line names them); set them on the server`,
  )
}

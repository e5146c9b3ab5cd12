import {Errors, Flags} from '@oclif/core'

import {CLIENT_VARIABLES} from '../../lib/config/settings.js'

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
  retries: Flags.integer({
    description: 'Retries of a failed request (with --server).',
    helpValue: 'N',
    min: 0,
    max: 100,
    default: 8,
    helpGroup: SERVER,
  }),
  timeout: Flags.integer({
    description: 'Stop the run after S seconds, exit 2 (with --server).',
    helpValue: 'S',
    min: 1,
    helpGroup: SERVER,
  }),
}

/** The flags of a remote run over many images (mod scan). */
export const batchFlags = {
  concurrency: Flags.integer({description: 'Batch requests in flight (with --server).', helpValue: 'N', min: 1, max: 64, default: 4, helpGroup: SERVER}),
  resume: Flags.string({
    description: 'Journal the finished inputs; a rerun sends the rest.',
    helpValue: 'FILE',
    dependsOn: ['server'],
    helpGroup: SERVER,
  }),
}

/** Flags that choose the model or change the policy: a remote run scores with the server's. */
const LOCAL_ONLY = ['preset', 'model-dir', 'cache-dir', 'config', 'head', 'precision', 'threads', 'threshold', 'disable', 'only'] as const

/**
 * With --server, a flag of the command line that only a local model could honour is a usage error naming why;
 * the same settings from MOD_* variables are ignored (a CI runner may set them for other steps).
 */
export function refuseLocalFlags(argv: readonly string[]): void {
  const given = LOCAL_ONLY.filter((name) => argv.some((a) => a === `--${name}` || a.startsWith(`--${name}=`)))
  if (given.length === 0) return
  throw new Errors.CLIError(
    `${given.map((n) => `--${n}`).join(', ')} cannot be used with --server: the server scores with its own model and policy (the first stderr line names them); set them on the server`,
  )
}

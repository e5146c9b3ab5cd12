import {Errors, Flags} from '@oclif/core'

import {CLIENT_VARIABLES} from '../../lib/config/settings.js'

const SERVER = 'SERVER'

/** The flags of a remote run: where the server is, its key, and how hard to push and retry. */
export const serverFlags = {
  server: Flags.string({
    description:
      "Score on this mod serve (or a fleet behind a load balancer) instead of a local model: same outputs and exit codes, with the server's policy and model (scan-video: as a job on its queue). The model and policy flags are refused with it.",
    env: CLIENT_VARIABLES.server,
    helpGroup: SERVER,
  }),
  'api-key': Flags.string({description: "The server's API key (sent as X-API-Key); prefer MOD_API_KEY, since a flag's value shows in the process list.", env: CLIENT_VARIABLES.apiKey, helpGroup: SERVER}),
  retries: Flags.integer({
    description:
      'Retries of a request that failed on the connection or was answered 429, 502, 503 or 504 (waiting as its Retry-After says, else backing off from 0.25 s to 10 s) before the run fails (with --server).',
    min: 0,
    max: 100,
    default: 8,
    helpGroup: SERVER,
  }),
  timeout: Flags.integer({
    description:
      "With --server: stop the run after this many seconds (exit 2, server_unreachable), however the server answers. Each request has its own limits besides: headers within 60 s (else retried), the whole answer within 30 s more (else the run fails).",
    min: 1,
    helpGroup: SERVER,
  }),
}

/** The flags of a remote run over many images (mod scan). */
export const batchFlags = {
  concurrency: Flags.integer({description: 'Batch requests in flight at once (with --server).', min: 1, max: 64, default: 4, helpGroup: SERVER}),
  resume: Flags.string({
    description:
      "With --server: keep a journal of the finished inputs in this file (NDJSON); a rerun with the same file sends only the inputs not in it (or changed since) and prints every result. Tied to the server's policy, and signed with MOD_JOURNAL_KEY (else the API key): a journal edited or written under another key is refused. Keep it out of the scanned workspace.",
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

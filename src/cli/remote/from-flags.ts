import {ModError} from '../../lib/errors.js'
import {CLIENT_VARIABLES, DEFAULT_LIMITS, readSettings, type Env, type Limits} from '../../lib/config/settings.js'
import type {PresetName} from '../../lib/policy/types.js'
import {refuseLocalFlags} from './flags.js'
import {remoteEngine, type RemoteEngine} from './engine.js'

export interface RemoteFlagValues {
  server?: string
  'api-key'?: string
  /** Batch requests in flight (scan); 1 where there is one request at a time (scan-video). */
  concurrency?: number
  retries: number
  timeout?: number
  resume?: string
}

/** What a scan reads from its configuration, as the server states it: the policy file is the server's. */
export interface RemoteConfig {
  preset: PresetName
  policyFound: false
  /** Inputs are read up to the server's image size limit. */
  settings: {engine: {limits: Limits}}
}

/**
 * `--server URL` and its flags → an engine that scores on the server, already asked what the server scores with
 * (one stderr line says it), and the configuration a scan reads, from the server.
 */
export async function remoteFromFlags(
  flags: RemoteFlagValues & {server: string},
  argv: readonly string[],
  log: (line: string) => void,
  signal: AbortSignal,
  env: Env = process.env,
): Promise<{engine: RemoteEngine; config: RemoteConfig}> {
  refuseLocalFlags(argv)
  // Trimmed as the server trims its MOD_API_KEY: a key file's trailing newline is no part of the key.
  const apiKey = flags['api-key']?.trim() || undefined
  // An HTTP header cannot carry one, and undici's own error would read as a bug in mod.
  if (apiKey !== undefined && /[\x00-\x08\x0a-\x1f\x7f]/.test(apiKey)) {
    throw new ModError('invalid_config', '--api-key / MOD_API_KEY holds a control character (a line break inside it, say): an HTTP header cannot carry it')
  }
  // The proxies a CI runner may need to reach the server, read where every setting is.
  const {proxy} = readSettings({}, env).engine
  const engine = remoteEngine({
    proxy,
    server: flags.server,
    apiKey,
    attempts: flags.retries + 1,
    concurrency: flags.concurrency ?? 1,
    resume: flags.resume,
    journalKey: env[CLIENT_VARIABLES.journalKey] || undefined,
    timeoutMs: flags.timeout === undefined ? undefined : flags.timeout * 1000,
    log,
    signal,
  })
  const facts = await engine.load().catch(async (e: unknown) => {
    await engine.close()
    throw e
  })
  return {engine, config: {preset: facts.preset, policyFound: false, settings: {engine: {limits: {...DEFAULT_LIMITS, maxBytes: facts.maxBytes}}}}}
}

import type {ServerSettings} from '../../lib/config/settings.js'

/**
 * Why the jobs API is off for these settings, or undefined when it is on: with several workers and no Redis,
 * each worker's in-process queue would hold its own jobs, and a poll landing on another worker would not find
 * the job. Answering 503 on every job route beats an API that half works.
 */
export function jobsUnavailable(settings: {workers: ServerSettings['workers']; jobs: Pick<ServerSettings['jobs'], 'redisUrl'>}): string | undefined {
  if (settings.workers <= 1 || settings.jobs.redisUrl !== undefined) return undefined
  return (
    `the jobs API needs MOD_REDIS_URL when mod serve runs more than one worker (${settings.workers} here): each ` +
    'worker would keep its own jobs; set MOD_REDIS_URL to a Redis server, or serve with --workers 1'
  )
}

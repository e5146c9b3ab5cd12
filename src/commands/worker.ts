import {ModCommand} from '../cli/base-command.js'
import {engineFromConfig} from '../lib/compose.js'
import {modelFlags, settingsInput} from '../cli/flags.js'
import type {EnvVars} from '../cli/help.js'
import {loadConfig} from '../lib/config/load.js'
import {ModError} from '../lib/errors.js'
import {describe} from '../server/errors.js'
import {refusedCredentials} from '../server/jobs/redis-connection.js'
import {MAX_STALLED_COUNT, recoverySeconds} from '../server/jobs/recovery.js'
import {videoJobRunner} from '../server/jobs/runner.js'
import {SWEEP_GRACE_MS} from '../server/jobs/sweep.js'
import {jobUploadRoot, sweepLeftovers} from '../server/lifecycle.js'
import {jobQueue} from '../server/jobs/service.js'
import {chunkRunnerFor, imageJobQueue} from '../server/jobs/images/service.js'
import {stopSignals} from '../server/lifecycle.js'

/** The Redis URL as it may be printed: no password. */
function redisName(url: string): string {
  const u = new URL(url)
  return `${u.protocol}//${u.host}`
}

export default class Worker extends ModCommand {
  static override description = `Run video jobs and the chunks of image jobs from the Redis queue (MOD_REDIS_URL) without serving HTTP.

Jobs are accepted by any "mod serve" with the same MOD_REDIS_URL (POST /v1/jobs/video); their uploads are read from MOD_JOB_STORAGE, which must be the same folder on every node. A worker runs one video job and one chunk of an image job (up to 32 images) at a time; start more workers to run more. An image chunk whose worker died is run again by another, and its items' lines are written once. A worker that dies mid-job loses it to another worker within ${recoverySeconds()} s (once its lock expires), at most ${MAX_STALLED_COUNT} times, then the job fails. Job folders in MOD_JOB_STORAGE whose job the queue no longer has (lost with Redis) are removed ${SWEEP_GRACE_MS / 60_000} minutes after their last change, and at start, the uploads that processes of this host which no longer run were still receiving there. Only jobs with the ids and fields this server writes are run: Redis holds no paths. On SIGTERM, SIGHUP (a closed terminal) or Ctrl-C it finishes the job in hand and exits 0; a second signal ends it at once, of that signal (a shell reports 128 + its number: 143 for SIGTERM, 130 for Ctrl-C, 129 for SIGHUP).`

  static override examples = ['$ MOD_REDIS_URL=redis://:$REDIS_PASSWORD@queue:6379 MOD_JOB_STORAGE=/shared/jobs <%= config.bin %> worker']

  static override ownSignals = true

  static override envVars: EnvVars = [
    ['MOD_REDIS_URL', 'the Redis of the job queue (required), with its password: redis://:password@host:6379'],
    ['MOD_JOB_STORAGE', 'the folder, shared with the servers, where uploads wait'],
    ['MOD_JOB_TTL', 'seconds a finished job stays readable (default 3600)'],
    ['MOD_CALLBACK_SECRET', 'key of the X-Mod-Signature of job callbacks'],
    ['MOD_CALLBACK_ALLOW_PRIVATE', 'let callbacks reach private addresses (default false)'],
    ['MOD_MAX_VIDEO_SECONDS', 'longest video (default 600)'],
    ['MOD_ALLOW_URLS', 'fetch the URLs of image jobs (default false: their items get url_fetch_disabled)'],
    ['MOD_URL_TIMEOUT_MS', 'time limit of one image fetch (default 10000)'],
    ['MOD_MAX_BYTES', 'largest image of an image job, uploaded or fetched (default 25MB)'],
    ['MOD_MAX_PIXELS', 'most pixels an image may decode to (default 100000000)'],
    ['MOD_TEXT_BUDGET', "recogniser columns the text rules' reader may spend per image, over the policy's text.budget (default 32768)"],
    ['MOD_FFMPEG', 'the ffmpeg binary for video'],
  ]

  static override exitCodes: [string, string][] = [
    ['0', 'stopped by SIGTERM, SIGHUP or Ctrl-C after finishing the job in hand'],
    ['2', 'it could not start: configuration or model error, or no MOD_REDIS_URL'],
    ['129', 'a second signal, SIGHUP: ended by it at once, without waiting'],
    ['130', 'a second signal, Ctrl-C: ended by it at once, without waiting'],
    ['143', 'a second signal, SIGTERM: ended by it at once, without waiting'],
  ]

  static override flags = {...modelFlags}

  async run(): Promise<void> {
    const {flags} = await this.parse(Worker)
    const config = await loadConfig(settingsInput(flags), process.env)
    const settings = config.settings.server
    const url = settings.jobs.redisUrl
    if (url === undefined) {
      throw new ModError('invalid_config', 'mod worker takes jobs from Redis: set MOD_REDIS_URL (e.g. redis://127.0.0.1:6379)')
    }
    // A password Redis refuses would never heal: a setting to mend, said before the model is loaded.
    const refused = await refusedCredentials(url)
    if (refused !== undefined) throw new ModError('invalid_config', `MOD_REDIS_URL: Redis refused its credentials (${refused}): mend the password in the URL`)
    const log = (line: string) => process.stderr.write(`${line}\n`)
    const stop = stopSignals(log)
    const engine = engineFromConfig(config, {eager: true})
    try {
      await engine.load()
    } catch (e) {
      log(`error: the model could not be loaded: ${describe(e)}`)
      process.exit(2)
    }
    // Job uploads that a process of this host was receiving when it died.
    await sweepLeftovers(log, [jobUploadRoot(settings.jobs.storage)])
    const queue = jobQueue(settings, log)
    queue.work(videoJobRunner(engine))
    const images = imageJobQueue(settings, log)
    images.work(chunkRunnerFor(engine, settings, log))
    log(`worker ${process.pid}: taking jobs from ${redisName(url)}`)
    await stop
    log('stopping: finishing the job in hand')
    await Promise.all([queue.close(), images.close()])
    await engine.close()
    process.exit(0)
  }
}

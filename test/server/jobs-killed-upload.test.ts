// Job uploads of a process killed by SIGKILL mid-upload: their half-written files in MOD_JOB_STORAGE are removed
// by the next `mod serve` or `mod worker` to start, or by the cluster primary as soon as it sees its worker die.
import {randomUUID} from 'node:crypto'
import {mkdirSync, readdirSync, statSync} from 'node:fs'
import {basename, join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {STAGING_NAME, startStaging} from '../../src/server/jobs/staging.js'
import {jobUploadRoot, sweepLeftovers} from '../../src/server/lifecycle.js'
import {startRedis} from '../helpers/redis.js'
import {warmCacheDir} from '../helpers/warm-cache.js'
import {multipartParts, rawRequest, serveProcess, tempDir, TOY_MODEL, until, type ServeProcess} from './harness.js'

const dir = tempDir('mod-jobs-killed-upload-')
const children: ServeProcess[] = []

test.after(() => {
  for (const c of children) c.child.kill('SIGKILL')
  dir.remove()
})

function serve(storage: string, args: string[] = [], extra: Record<string, string> = {}): ServeProcess {
  const env = {MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache')), MOD_MODEL_DIR: TOY_MODEL, MOD_PRELOAD: 'false', MOD_JOB_STORAGE: storage, ...extra}
  const p = serveProcess(['--port', '0', ...args], env)
  children.push(p)
  return p
}

/**
 * An upload to `path` that sends its head and 32 KiB of a 1 MiB file, then holds the connection open (for the whole
 * test: a busy machine may take seconds to write the first bytes, and a closed connection removes the upload).
 */
function halfUpload(base: string, path: string, field: string) {
  const {head, type} = multipartParts(field, 'big.bin')
  const answer = rawRequest(`${base}${path}`, {headers: {'content-type': type, 'content-length': head.length + 1024 * 1024}, timeoutMs: 120_000}, (req) => {
    req.write(head)
    req.write(Buffer.alloc(32 * 1024, 1))
  })
  answer.catch(() => {})
}

/** The uploads arriving in `storage`, once each of `count` has some bytes on disk: their folder names. */
async function arriving(storage: string, count: number): Promise<string[]> {
  const written = () => readdirSync(storage).filter((name) => STAGING_NAME.test(name) && readdirSync(join(storage, name)).some((f) => statSync(join(storage, name, f)).size > 0))
  await until(() => written().length === count, 30_000)
  return written()
}

const listening = async (p: ServeProcess) => (await p.waitFor(/^listening on (http:\/\/127\.0\.0\.1:\d+)( \(\d+ workers\))?$/))[1]

test('a mod serve killed mid-upload leaves its half-written job uploads; the next one to start removes them', async () => {
  const storage = join(dir.path, 'single')
  mkdirSync(storage)
  const first = serve(storage)
  const base = await listening(first)
  halfUpload(base, '/v1/jobs/video', 'file')
  halfUpload(base, '/v1/jobs/images', 'files')
  const names = await arriving(storage, 2)
  // Named by the process that was writing them.
  assert.equal(new Set(names.map((name) => STAGING_NAME.exec(name)?.[1])), new Set([String(first.child.pid)]))
  first.child.kill('SIGKILL')
  await first.exited
  assert.equal(readdirSync(storage).sort(), names.sort(), 'a killed process removes nothing')

  const next = serve(storage)
  await listening(next)
  assert.equal(readdirSync(storage), [])
  next.child.kill('SIGTERM')
  await next.exited
})

test('mod worker removes, at start, the half-written job uploads of a mod serve killed mid-upload on its host', async () => {
  const storage = join(dir.path, 'worker')
  mkdirSync(storage)
  const first = serve(storage)
  halfUpload(await listening(first), '/v1/jobs/images', 'files')
  await arriving(storage, 1)
  first.child.kill('SIGKILL')
  await first.exited
  const redis = await startRedis()
  try {
    const env = {MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache')), MOD_MODEL_DIR: TOY_MODEL, MOD_JOB_STORAGE: storage, MOD_REDIS_URL: redis.url}
    const worker = serveProcess([], env, 'worker')
    children.push(worker)
    await worker.waitFor(/taking jobs from/)
    assert.equal(readdirSync(storage), [])
    worker.child.kill('SIGTERM')
    await worker.exited
  } finally {
    await redis.remove()
  }
})

test('an upload left by an earlier process with this process id (a restarted container) is removed; this process\'s own stays', async () => {
  const storage = join(dir.path, 'same-pid')
  const id = randomUUID()
  const own = await startStaging(storage, id)
  // As this process would have named it in an earlier run: same id, same host, another run.
  const earlier = basename(own).replace(STAGING_NAME, (_all, pid, host, run, job) => `.upload.${pid}@${host}.${run === '00000000' ? '11111111' : '00000000'}.${job}`)
  mkdirSync(join(storage, earlier))
  await sweepLeftovers(() => {}, [jobUploadRoot(storage)])
  assert.equal(readdirSync(storage), [basename(own)])
})

test('a worker of mod serve --workers 2 killed mid-upload: the primary removes its half-written job uploads when it sees it die', async () => {
  const storage = join(dir.path, 'cluster')
  mkdirSync(storage)
  // Job routes of more than one worker need Redis.
  const redis = await startRedis()
  try {
    const primary = serve(storage, ['--workers', '2'], {MOD_REDIS_URL: redis.url, MOD_SERVE_JOBS: 'false'})
    const base = await listening(primary)
    halfUpload(base, '/v1/jobs/images', 'files')
    const [name] = await arriving(storage, 1)
    const worker = Number(STAGING_NAME.exec(name)?.[1])
    assert.is.not(worker, primary.child.pid)
    process.kill(worker, 'SIGKILL')
    await until(() => readdirSync(storage).length === 0, 30_000)
    primary.child.kill('SIGTERM')
    await primary.exited
  } finally {
    await redis.remove()
  }
})

test.run()

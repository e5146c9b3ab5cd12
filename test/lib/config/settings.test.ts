import {mkdtempSync, rmSync, symlinkSync, writeFileSync} from 'node:fs'
import {homedir, tmpdir} from 'node:os'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {defaultJobStorage} from '../../../src/lib/config/jobs.js'
import {DEFAULT_LIMITS, readSettings} from '../../../src/lib/config/settings.js'

const cwd = '/work/here'

/** Both sections of the settings as one value, for checks that do not care which section holds a field. */
function flat(...args: Parameters<typeof readSettings>) {
  const {engine, server} = readSettings(...args)
  return {...engine, ...server}
}

function failure(fn: () => unknown): {code: string; message: string} {
  try {
    fn()
  } catch (e) {
    return e as {code: string; message: string}
  }
  throw new Error('expected a failure')
}

test('with no input and no variables every setting has its default, in an engine and a server section', () => {
  const s = readSettings({}, {}, cwd)
  assert.is(s.engine.limits, s.server.limits)
  assert.equal({...s.engine, ...s.server}, {
    preset: undefined,
    modelDir: undefined,
    cacheDir: join(homedir(), '.cache', 'mod'),
    configPath: undefined,
    headPath: undefined,
    ffmpeg: undefined,
    threads: undefined,
    precision: 'fp32',
    int8Weights: 'auto',
    textBudget: undefined,
    limits: DEFAULT_LIMITS,
    proxy: {httpProxy: undefined, httpsProxy: undefined, noProxy: undefined},
    host: '127.0.0.1',
    port: 8000,
    workers: 1,
    apiKey: undefined,
    apiKeys: [],
    allowUrls: false,
    preload: true,
    logLevel: 'info',
    corsOrigins: [],
    drainDelayMs: 0,
    keepAliveMs: 5000,
    serverTiming: false,
    jobs: {
      redisUrl: undefined,
      storage: defaultJobStorage(),
      ttlSeconds: 3600,
      serveJobs: true,
      callbackSecret: undefined,
      callbackAllowPrivate: false,
      images: {maxItems: 10_000, maxBytes: 2 * 1024 ** 3, maxPerClient: 4},
    },
  })
})

test('the job variables are read, and a bad one is a configuration error naming it', () => {
  const env = {
    MOD_REDIS_URL: 'redis://queue:6379',
    MOD_JOB_STORAGE: 'shared',
    MOD_JOB_TTL: '60',
    MOD_SERVE_JOBS: 'false',
    MOD_CALLBACK_SECRET: 's3cret',
    MOD_CALLBACK_ALLOW_PRIVATE: 'true',
    MOD_MAX_JOB_ITEMS: '500',
    MOD_MAX_JOB_BYTES: '1GB',
    MOD_MAX_JOBS_PER_CLIENT: '2',
  }
  assert.equal(flat({}, env, cwd).jobs, {
    redisUrl: 'redis://queue:6379',
    storage: join(cwd, 'shared'),
    ttlSeconds: 60,
    serveJobs: false,
    callbackSecret: 's3cret',
    callbackAllowPrivate: true,
    images: {maxItems: 500, maxBytes: 1024 ** 3, maxPerClient: 2},
  })
  const bad = [['MOD_JOB_TTL', '0'], ['MOD_SERVE_JOBS', 'maybe'], ['MOD_REDIS_URL', 'localhost:6379'], ['MOD_MAX_JOB_ITEMS', '0'], ['MOD_MAX_JOB_BYTES', 'lots'], ['MOD_MAX_JOBS_PER_CLIENT', '1.5']]
  for (const [name, value] of bad) {
    assert.throws(() => flat({}, {[name]: value}, cwd), (e: Error) => e.message.startsWith(`${name}=`), name)
  }
})

test('a cache folder that exists as a file is refused, named, whichever way it was given', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mod-settings-'))
  try {
    const file = join(dir, 'cache')
    writeFileSync(file, '')
    const refused = (e: {code: string; message: string}) =>
      e.code === 'invalid_config' && e.message === `the cache folder ${file} cannot be used: it is not a folder; give --cache-dir or MOD_CACHE_DIR a folder`
    assert.throws(() => readSettings({}, {MOD_CACHE_DIR: file}), refused)
    assert.throws(() => readSettings({cacheDir: file}, {}), refused)
    assert.is(readSettings({}, {MOD_CACHE_DIR: join(dir, 'not-yet')}).engine.cacheDir, join(dir, 'not-yet'))
    assert.is(readSettings({}, {MOD_CACHE_DIR: join(dir, 'not-yet', 'deeper')}).engine.cacheDir, join(dir, 'not-yet', 'deeper'))
    // A path through the file, and through a loop of links, can never be a folder.
    const under = join(file, 'sub')
    assert.throws(
      () => readSettings({}, {MOD_CACHE_DIR: under}),
      (e: {code: string; message: string}) =>
        e.code === 'invalid_config' && e.message === `the cache folder ${under} cannot be used: ${file} is not a folder; give --cache-dir or MOD_CACHE_DIR a folder`,
    )
    symlinkSync(join(dir, 'loop'), join(dir, 'loop'))
    assert.throws(
      () => readSettings({}, {MOD_CACHE_DIR: join(dir, 'loop', 'sub')}),
      (e: {code: string; message: string}) => e.code === 'invalid_config' && e.message.includes('cannot be used: a loop of symbolic links (ELOOP)'),
    )
  } finally {
    rmSync(dir, {recursive: true, force: true})
  }
})

test('an input value wins over its variable, which wins over the default; paths resolve from cwd', () => {
  const env = {MOD_PRESET: 'balanced', MOD_CACHE_DIR: 'cache', MOD_THREADS: '3', MOD_PRECISION: 'int8', MOD_PORT: '9000', MOD_MODEL_DIR: '/m'}
  const fromEnv = flat({}, env, cwd)
  assert.equal([fromEnv.preset, fromEnv.cacheDir, fromEnv.threads, fromEnv.precision, fromEnv.port, fromEnv.modelDir], ['balanced', '/work/here/cache', 3, 'int8', 9000, '/m'])
  const fromInput = flat({preset: 'accurate', cacheDir: '/c', threads: 1, precision: 'fp16', port: 0, modelDir: 'model'}, env, cwd)
  assert.equal([fromInput.preset, fromInput.cacheDir, fromInput.threads, fromInput.precision, fromInput.port, fromInput.modelDir], ['accurate', '/c', 1, 'fp16', 0, '/work/here/model'])
})

test('an empty path typed as a flag is refused, naming the flag (`--config "$POLICY"` with the variable unset must not fall back to another policy); an empty variable is unset', () => {
  for (const [key, flag] of [['config', '--config'], ['cacheDir', '--cache-dir'], ['modelDir', '--model-dir'], ['head', '--head']] as const) {
    assert.throws(() => readSettings({[key]: ''}, {}, cwd), (e: Error) => (e as Error & {code: string}).code === 'invalid_config' && e.message === `${flag} is empty: give it a path, or leave the flag out`)
  }
  const unset = flat({}, {MOD_CONFIG: '', MOD_CACHE_DIR: '', MOD_MODEL_DIR: '', MOD_HEAD: ''}, cwd)
  assert.equal([unset.configPath, unset.modelDir, unset.headPath], [undefined, undefined, undefined])
  assert.is(unset.cacheDir, flat({}, {}, cwd).cacheDir)
})

test('a path setting starting with ~ or ~/ is in the home folder, as a shell would read it; ~name and a ~ inside stay as written', () => {
  const env = {MOD_CACHE_DIR: '~/mod-cache', MOD_MODEL_DIR: '~', MOD_CONFIG: '~other/p.yaml', MOD_HEAD: 'a/~/h.onnx'}
  const r = readSettings({}, env, cwd)
  assert.equal(
    [r.engine.cacheDir, r.engine.modelDir, r.engine.configPath, r.engine.headPath],
    [join(homedir(), 'mod-cache'), homedir(), '/work/here/~other/p.yaml', '/work/here/a/~/h.onnx'],
  )
})

test('variables without a flag are read and validated: limits, key, switches', () => {
  const s = flat({}, {MOD_MAX_BYTES: '2MB', MOD_QUEUE_LIMIT: '0', MOD_API_KEY: 'k', MOD_ALLOW_URLS: 'yes', MOD_PRELOAD: 'off', MOD_FFMPEG: 'bin/ffmpeg', MOD_INT8_WEIGHTS: 'unsigned'}, cwd)
  assert.is(s.limits.maxBytes, 2 * 1024 * 1024)
  assert.is(s.limits.queueLimit, 0)
  assert.equal([s.apiKey, s.allowUrls, s.preload, s.ffmpeg, s.int8Weights], ['k', true, false, '/work/here/bin/ffmpeg', 'unsigned'])
})

test('uploads in progress default to twice the queue places and the body timeout to 30 s; both can be set', () => {
  const defaults = flat({}, {}, cwd).limits
  assert.equal([defaults.maxUploads, defaults.bodyTimeoutMs], [130, 30_000])
  assert.is(flat({}, {MOD_QUEUE_LIMIT: '3'}, cwd).limits.maxUploads, 8)
  const set = flat({}, {MOD_QUEUE_LIMIT: '3', MOD_MAX_UPLOADS: '5', MOD_BODY_TIMEOUT_MS: '1500'}, cwd).limits
  assert.equal([set.maxUploads, set.bodyTimeoutMs], [5, 1500])
})

test('a body must average 8 KiB/s and one client may send a quarter of the upload places; flag over variable over default', () => {
  const defaults = flat({}, {}, cwd).limits
  assert.equal([defaults.bodyMinRate, defaults.maxUploadsPerClient], [8192, 32])
  assert.is(flat({}, {MOD_MAX_UPLOADS: '10'}, cwd).limits.maxUploadsPerClient, 2)
  assert.is(flat({}, {MOD_MAX_UPLOADS: '3'}, cwd).limits.maxUploadsPerClient, 1)
  const set = flat({}, {MOD_BODY_MIN_RATE: '1KB', MOD_MAX_UPLOADS_PER_CLIENT: '4'}, cwd).limits
  assert.equal([set.bodyMinRate, set.maxUploadsPerClient], [1024, 4])
  const flagged = flat({bodyMinRate: '512', maxUploadsPerClient: 2}, {MOD_BODY_MIN_RATE: '1KB', MOD_MAX_UPLOADS_PER_CLIENT: '4'}, cwd).limits
  assert.equal([flagged.bodyMinRate, flagged.maxUploadsPerClient], [512, 2])
  const slow = failure(() => flat({}, {MOD_BODY_MIN_RATE: 'fast'}, cwd))
  assert.equal([slow.code, slow.message], ['invalid_config', 'MOD_BODY_MIN_RATE="fast" is not valid: expected a size in whole bytes from 1 to 9007199254740991, or with a unit: 26214400, 25MB, 1.5GiB'])
  const none = failure(() => flat({}, {MOD_MAX_UPLOADS_PER_CLIENT: '0'}, cwd))
  assert.equal([none.code, none.message], ['invalid_config', 'MOD_MAX_UPLOADS_PER_CLIENT="0" is not valid: expected a whole number from 1 to 9007199254740991'])
})

test('MOD_TEXT_BUDGET sets the recogniser columns an image may read: unset by default (the policy or the default decides), a whole number in range', () => {
  const cwd = '/srv'
  assert.is(flat({}, {}, cwd).textBudget, undefined)
  assert.is(flat({}, {MOD_TEXT_BUDGET: ''}, cwd).textBudget, undefined)
  assert.is(flat({}, {MOD_TEXT_BUDGET: '65536'}, cwd).textBudget, 65_536)
  assert.is(flat({}, {MOD_TEXT_BUDGET: ' 2000 '}, cwd).textBudget, 2000)
  // Plain decimal, as every whole-number variable: these read as 100 000, 4 096, 2 000 and 2 000.
  for (const value of ['lots', '1279', '256001', '40000.5', '1e5', '0x1000', '0b11111010000', '2000.0', ' ']) {
    const e = failure(() => flat({}, {MOD_TEXT_BUDGET: value}, cwd))
    assert.equal([e.code, e.message], ['invalid_config', `MOD_TEXT_BUDGET=${JSON.stringify(value)} is not valid: expected a whole number of recogniser columns from 1280 to 256000`])
  }
})

test('the batch total and the buffered-bytes budget have defaults; the budget must hold the largest request', () => {
  const defaults = flat({}, {}, cwd).limits
  assert.equal([defaults.maxBatchBytes, defaults.maxBufferedBytes], [100 * 1024 * 1024, 256 * 1024 * 1024])
  const set = flat({}, {MOD_MAX_BATCH_BYTES: '10MB', MOD_MAX_BUFFERED_BYTES: '64MB'}, cwd).limits
  assert.equal([set.maxBatchBytes, set.maxBufferedBytes], [10 * 1024 * 1024, 64 * 1024 * 1024])
  // Unset, the budget grows to hold a raised batch total or image size: every command runs.
  assert.is(flat({}, {MOD_MAX_BATCH_BYTES: '300MB'}, cwd).limits.maxBufferedBytes, 301 * 1024 * 1024)
  assert.is(flat({}, {MOD_MAX_BYTES: '200MB'}, cwd).limits.maxBufferedBytes, 401 * 1024 * 1024)
  assert.throws(
    () => flat({}, {MOD_MAX_BATCH_BYTES: '300MB', MOD_MAX_BUFFERED_BYTES: '256MB'}, cwd),
    (e: {code: string; message: string}) =>
      e.code === 'invalid_config' &&
      e.message ===
        'MOD_MAX_BUFFERED_BYTES="256MB" is not valid: expected at least 301 MiB (315 621 376 bytes): the larger of MOD_MAX_BATCH_BYTES and 2 x MOD_MAX_BYTES, plus 1 MiB',
  )
  assert.throws(() => flat({}, {MOD_MAX_BYTES: '200MB', MOD_MAX_BUFFERED_BYTES: '256MB'}, cwd), /MOD_MAX_BUFFERED_BYTES="256MB"/)
})

test('MOD_HOST takes an IPv6 address in brackets, as a URL writes it, as that address; brackets around anything else are refused', () => {
  assert.is(readSettings({}, {MOD_HOST: '[::1]'}, cwd).server.host, '::1')
  assert.is(readSettings({}, {MOD_HOST: ' [fe80::1] '}, cwd).server.host, 'fe80::1')
  assert.is(readSettings({host: '[::]'}, {}, cwd).server.host, '::')
  for (const host of ['[127.0.0.1]', '[localhost]', '[::1]:8000', '[]']) {
    assert.throws(() => readSettings({}, {MOD_HOST: host}, cwd), (e: Error) => e.message === `MOD_HOST=${JSON.stringify(host)} is not valid: expected a host name or IP address, without a port or scheme: 127.0.0.1, 0.0.0.0, ::1 (or [::1]), localhost`, host)
  }
})

test('an invalid value is invalid_config naming the variable it came from', () => {
  const cases: [Record<string, string>, string][] = [
    [{MOD_THREADS: 'many'}, 'MOD_THREADS="many" is not valid: expected a whole number from 1 to 256'],
    // onnxruntime starts every thread asked for: 5000 took minutes and held off SIGTERM.
    [{MOD_THREADS: '257'}, 'MOD_THREADS="257" is not valid: expected a whole number from 1 to 256'],
    [{MOD_PORT: '70000'}, 'MOD_PORT="70000" is not valid: expected a whole number from 0 to 65535'],
    [{MOD_PRESET: 'fastest'}, 'MOD_PRESET="fastest" is not valid: expected one of fast, balanced, accurate'],
    [{MOD_PRECISION: 'int4'}, 'MOD_PRECISION="int4" is not valid: expected one of fp32, int8, fp16'],
    [{MOD_INT8_WEIGHTS: 'int8'}, 'MOD_INT8_WEIGHTS="int8" is not valid: expected one of auto, signed, unsigned'],
    [{MOD_MAX_BATCH: 'lots'}, 'MOD_MAX_BATCH="lots" is not valid: expected a whole number from 1 to 9007199254740991'],
    [{MOD_ALLOW_URLS: 'maybe'}, 'MOD_ALLOW_URLS="maybe" is not valid: expected true or false (also 1 or 0, yes or no, on or off)'],
    // Plain decimal only: spaces alone are no number (they read as 0), and neither is hex or an exponent.
    [{MOD_QUEUE_LIMIT: ' '}, 'MOD_QUEUE_LIMIT=" " is not valid: expected a whole number from 0 to 9007199254740991'],
    [{MOD_MAX_BATCH: '0x10'}, 'MOD_MAX_BATCH="0x10" is not valid: expected a whole number from 1 to 9007199254740991'],
    [{MOD_WORKERS: '1e3'}, 'MOD_WORKERS="1e3" is not valid: expected a whole number from 1 to 128'],
    // Each worker is a process with its engine, all forked at once.
    [{MOD_WORKERS: '1000'}, 'MOD_WORKERS="1000" is not valid: expected a whole number from 1 to 128'],
    // A wait longer than a timer takes would fire at once: refused, not turned into its opposite.
    [{MOD_BODY_TIMEOUT_MS: '3000000000'}, 'MOD_BODY_TIMEOUT_MS="3000000000" is not valid: expected a whole number from 1 to 2147483647'],
    [{MOD_JOB_TTL: '3000000'}, 'MOD_JOB_TTL="3000000" is not valid: expected a whole number from 1 to 2147483'],
  ]
  for (const [env, message] of cases) {
    const e = failure(() => flat({}, env, cwd))
    assert.is(e.code, 'invalid_config')
    assert.is(e.message, message)
  }
  assert.is(flat({}, {MOD_THREADS: '256'}, cwd).threads, 256)
  assert.is(flat({}, {MOD_WORKERS: '128'}, cwd).workers, 128)
  assert.is(failure(() => flat({threads: 5000}, {}, cwd)).message, '--threads / MOD_THREADS="5000" is not valid: expected a whole number from 1 to 256')
  assert.is(failure(() => flat({threads: 0}, {}, cwd)).message, '--threads / MOD_THREADS="0" is not valid: expected a whole number from 1 to 256')
  // A flag's value is named as a person writes the flag, never as the code's camelCase key.
  assert.is(failure(() => flat({bodyMinRate: 'fast'}, {}, cwd)).message, '--body-min-rate / MOD_BODY_MIN_RATE="fast" is not valid: expected a size in whole bytes from 1 to 9007199254740991, or with a unit: 26214400, 25MB, 1.5GiB')
})

test('download proxies: the lower-case spelling wins, an empty one is unset', () => {
  const s = flat({}, {https_proxy: 'http://a:1', HTTPS_PROXY: 'http://b:2', HTTP_PROXY: 'http://c:3', no_proxy: '', NO_PROXY: 'internal'}, cwd)
  assert.equal(s.proxy, {httpProxy: 'http://c:3', httpsProxy: 'http://a:1', noProxy: 'internal'})
})

test.run()

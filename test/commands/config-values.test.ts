/**
 * Every MOD_* variable that takes a number (a count, a duration, a size) refuses a wrong value the same way, in
 * `mod serve` and `mod scan` alike: one line naming the variable, the value as given and what it accepts, exit 2,
 * nothing started.
 */
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {readSettings} from '../../src/lib/config/settings.js'
import {runCli, solidPng, tempDir, TOY_MODEL} from '../helpers/cli.js'

const dir = tempDir()
test.after(() => dir.remove())

const SAFE = 9007199254740991
const SIZE = 'a size in whole bytes from 1 to 9007199254740991, or with a unit: 26214400, 25MB, 1.5GiB'
const whole = (min: number, max = SAFE) => `a whole number from ${min} to ${max}`

/** Each variable and what its refusal says it accepts. */
const ACCEPTS: Record<string, string> = {
  MOD_PORT: whole(0, 65_535),
  MOD_WORKERS: whole(1, 128),
  MOD_THREADS: whole(1, 256),
  MOD_MAX_UPLOADS_PER_CLIENT: whole(1),
  MOD_QUEUE_LIMIT: whole(0),
  MOD_MAX_UPLOADS: whole(1),
  MOD_MAX_PIXELS: whole(1),
  MOD_MAX_BATCH: whole(1),
  MOD_MAX_VIDEO_SECONDS: whole(1),
  MOD_MAX_JOB_ITEMS: whole(1),
  MOD_MAX_JOBS_PER_CLIENT: whole(1),
  MOD_URL_TIMEOUT_MS: whole(1, 2_147_483_647),
  MOD_BODY_TIMEOUT_MS: whole(1, 2_147_483_647),
  MOD_DRAIN_DELAY_MS: whole(0, 2_147_483_647),
  MOD_KEEPALIVE_TIMEOUT_MS: whole(1, 2_147_483_647),
  MOD_JOB_TTL: whole(1, 2_147_483),
  MOD_TEXT_BUDGET: 'a whole number of recogniser columns from 1280 to 256000',
  MOD_MAX_BYTES: SIZE,
  MOD_MAX_VIDEO_BYTES: SIZE,
  MOD_MAX_BATCH_BYTES: SIZE,
  MOD_MAX_BUFFERED_BYTES: SIZE,
  MOD_MAX_JOB_BYTES: SIZE,
  MOD_BODY_MIN_RATE: SIZE,
}

/** Wrong for every one of them (0 is a count of some, and is tried where it is not). */
const WRONG = ['abc', '1.5', '-1', '1e3', '0x10', '99999999999999999999', 'Infinity', '12abc', '+5', '٣']

const lineFor = (name: string, value: string) => `${name}=${JSON.stringify(value)} is not valid: expected ${ACCEPTS[name]}`

function refusal(env: Record<string, string>): string {
  try {
    readSettings({}, env, dir.path)
  } catch (e) {
    assert.is((e as {code?: string}).code, 'invalid_config')
    return (e as Error).message
  }
  throw new Error(`${JSON.stringify(env)} was accepted`)
}

test('each wrong value of each number variable is refused with the variable, the value and what it accepts', () => {
  for (const name of Object.keys(ACCEPTS)) {
    const wrong = ACCEPTS[name].startsWith('a whole number from 0') ? WRONG : [...WRONG, '0']
    for (const value of wrong) assert.is(refusal({[name]: value}), lineFor(name, value), `${name}=${value}`)
  }
})

test('spaces around a number are ignored and an empty value is unset, for every number variable', () => {
  const valid = (name: string) => (name === 'MOD_TEXT_BUDGET' ? '2000' : name === 'MOD_MAX_BUFFERED_BYTES' ? '512MB' : '8')
  for (const name of Object.keys(ACCEPTS)) {
    assert.not.throws(() => readSettings({}, {[name]: ` ${valid(name)} `}, dir.path), name)
    assert.not.throws(() => readSettings({}, {[name]: ''}, dir.path), name)
  }
})

test('a size is whole bytes, or a unit of which a fraction rounds down to a byte', () => {
  const rate = (value: string) => readSettings({}, {MOD_BODY_MIN_RATE: value}, dir.path).engine.limits.bodyMinRate
  assert.is(rate('1.5KB'), 1536)
  assert.is(rate('1.3k'), 1331)
  assert.is(rate('8192'), 8192)
  // A fraction of a byte was read as that byte, rounded down (MOD_MAX_BYTES=1.5 refused every image over 1 byte).
  assert.is(refusal({MOD_MAX_BYTES: '1.5'}), lineFor('MOD_MAX_BYTES', '1.5'))
  assert.is(refusal({MOD_MAX_BYTES: '1.5b'}), lineFor('MOD_MAX_BYTES', '1.5b'))
  assert.is(refusal({MOD_MAX_BYTES: '0.0001KB'}), lineFor('MOD_MAX_BYTES', '0.0001KB'))
  // Past the largest exact number: the value read would not be the one written.
  assert.is(refusal({MOD_MAX_JOB_BYTES: '9007199254740992'}), lineFor('MOD_MAX_JOB_BYTES', '9007199254740992'))
  assert.is(refusal({MOD_MAX_JOB_BYTES: '99999999G'}), lineFor('MOD_MAX_JOB_BYTES', '99999999G'))
})

/**
 * A variable of each kind (a port, a count, a duration, a size, the text budget) with a wrong value each, run as a
 * person runs mod: every variable and value is checked above in-process, through the same settings reader both
 * commands call, and each process costs a start of mod.
 */
const PAIRS: [string, string][] = [
  ['MOD_PORT', '99999999999999999999'],
  ['MOD_WORKERS', '1e3'],
  ['MOD_BODY_TIMEOUT_MS', '1.5'],
  ['MOD_MAX_BYTES', '0x10'],
  ['MOD_TEXT_BUDGET', '٣'],
]

async function eachPair(run: (name: string, value: string) => Promise<void>): Promise<void> {
  // Three processes at a time: the machine is shared.
  const queue = [...PAIRS]
  await Promise.all(
    Array.from({length: 3}, async () => {
      for (let pair = queue.shift(); pair; pair = queue.shift()) await run(...pair)
    }),
  )
}

test('mod serve refuses each before it starts: one line, exit 2, nothing listening', async () => {
  await eachPair(async (name, value) => {
    const env: Record<string, string> = {MOD_MODEL_DIR: TOY_MODEL, MOD_LOG_LEVEL: 'debug', [name]: value}
    if (name !== 'MOD_PORT') env.MOD_PORT = '0'
    const r = await runCli(['serve'], {env})
    assert.is(r.stderr, `mod: invalid_config: ${lineFor(name, value)}\n`, name)
    assert.is(r.stdout, '', name)
    assert.is(r.code, 2, name)
  })
})

test('mod scan refuses each alike, before reading an image', async () => {
  const image = join(dir.path, 'grey.png')
  writeFileSync(image, await solidPng(128, 128, 128))
  await eachPair(async (name, value) => {
    const r = await runCli(['scan', image], {env: {MOD_MODEL_DIR: TOY_MODEL, [name]: value}})
    assert.is(r.stderr, `mod: invalid_config: ${lineFor(name, value)}\n`, name)
    assert.is(r.stdout, '', name)
    assert.is(r.code, 2, name)
  })
})

test('a flag given on the command line is refused in the same words, naming the flag, as a usage error', async () => {
  for (const [args, line] of [
    [['--port', '70000'], `--port="70000" is not valid: expected ${ACCEPTS.MOD_PORT}`],
    [['--workers', '1e3'], `--workers="1e3" is not valid: expected ${ACCEPTS.MOD_WORKERS}`],
    [['--threads=1.5'], `--threads="1.5" is not valid: expected ${ACCEPTS.MOD_THREADS}`],
    [['--max-uploads-per-client', '0'], `--max-uploads-per-client="0" is not valid: expected ${ACCEPTS.MOD_MAX_UPLOADS_PER_CLIENT}`],
    [['--body-min-rate', 'fast'], `--body-min-rate="fast" is not valid: expected ${SIZE}`],
  ] as const) {
    const r = await runCli(['serve', ...args], {env: {MOD_MODEL_DIR: TOY_MODEL, MOD_PORT: '0'}})
    assert.is(r.stderr, `mod: usage: ${line}\n`, args.join(' '))
    assert.is(r.code, 2)
  }
  // The flag wins over its variable, which is then not read at all.
  const both = await runCli(['serve', '--workers', '1e3'], {env: {MOD_MODEL_DIR: TOY_MODEL, MOD_WORKERS: 'x'}})
  assert.is(both.stderr, `mod: usage: --workers="1e3" is not valid: expected ${ACCEPTS.MOD_WORKERS}\n`)
})

test('an empty path flag (`--config "$POLICY"` with the variable unset) is refused before anything is read: one line naming the flag, exit 2, nothing on stdout', async () => {
  const image = join(dir.path, 'empty-path.png')
  writeFileSync(image, await solidPng(200, 0, 0))
  for (const flag of ['--config', '--cache-dir', '--model-dir', '--head']) {
    const r = await runCli(['scan', image, flag, ''], {env: {MOD_MODEL_DIR: TOY_MODEL}})
    assert.equal([r.code, r.stdout, r.stderr], [2, '', `mod: invalid_config: ${flag} is empty: give it a path, or leave the flag out\n`], flag)
  }
})

test('every number flag of every command is refused in those words; --timeout past the longest timer too', async () => {
  for (const [args, line] of [
    // A timer past 2147483647 ms fires at once: --timeout 3000000 stopped the run as it began, "after 3000000 s".
    [['scan', 'x.png', '--server', 'http://127.0.0.1:9', '--timeout', '3000000'], '--timeout="3000000" is not valid: expected a whole number from 1 to 2147483'],
    [['scan', 'x.png', '--server', 'http://127.0.0.1:9', '--retries', '101'], '--retries="101" is not valid: expected a whole number from 0 to 100'],
    [['scan', 'x.png', '--server', 'http://127.0.0.1:9', '--concurrency', '1e1'], '--concurrency="1e1" is not valid: expected a whole number from 1 to 64'],
    [['scan', 'x.png', '--report', 'r.html', '--report-sample', '-1'], `--report-sample="-1" is not valid: expected ${whole(0)}`],
    [['scan-video', 'x.mp4', '--min-frames', '0x10'], '--min-frames="0x10" is not valid: expected a whole number from 1 to 1000'],
    [['head', 'train', 'data', '--out', 'h.json', '--max-epochs', '0'], `--max-epochs="0" is not valid: expected ${whole(1)}`],
    [['head', 'train', 'data', '--out', 'h.json', '--seed', '1e3'], `--seed="1e3" is not valid: expected ${whole(0)}`],
    [['calibrate', 'data', '--seed', '-2'], `--seed="-2" is not valid: expected ${whole(0)}`],
  ] as const) {
    const r = await runCli([...args], {cwd: dir.path})
    assert.is(r.stderr, `mod: usage: ${line}\n`, args.join(' '))
    assert.is(r.code, 2)
  }
})

test.run()

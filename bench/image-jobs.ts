/**
 * A 2 000-image job on Redis with three `mod worker` processes, one of them killed (SIGKILL) mid-job and Redis
 * killed and restarted (appendonly, fsync always) mid-job: checks that every item has exactly one line, in order,
 * with the right verdict, and prints how long it took, what Redis stored per item and the commands it ran. The
 * toy model scores (tests/fixtures/models/toy, `npm run fixtures`): the figures are the queue's, not a model's.
 *
 *   npm run build && npx tsx bench/image-jobs.ts [items=2000] [workers=3]
 */
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {Redis} from 'ioredis'
import sharp from 'sharp'

import {header, load, ROOT, table} from './lib.js'
import {acceptingServer, freePort, modEnv, modWorkers, startRedis, stopAll} from './processes.js'

const ITEMS = Number(process.argv[2] ?? 2000)
const WORKERS = Number(process.argv[3] ?? 3)
const TOY = join(ROOT, 'test', 'fixtures', 'models', 'toy')
const dir = mkdtempSync(join(tmpdir(), 'mod-bench-image-jobs-'))
const redisPort = await freePort()
const redisUrl = `redis://127.0.0.1:${redisPort}`
const env = modEnv(dir, TOY, redisUrl)

header('image-jobs', `${ITEMS} uploaded images, ${WORKERS} mod worker processes, one killed and Redis restarted mid-job`)
let redis = await startRedis(dir, redisPort)
const {base} = await acceptingServer(env)
const workers = await modWorkers(WORKERS, env)

const [red, blue] = await Promise.all([[255, 0, 0], [0, 0, 255]].map(([r, g, b]) => sharp({create: {width: 16, height: 16, channels: 3, background: {r, g, b}}}).png().toBuffer()))
const form = new FormData()
for (let i = 0; i < ITEMS; i++) form.append('files', new Blob([new Uint8Array(i % 7 === 0 ? red : blue)]), `${i}.png`)

const probe = new Redis(redisUrl)
const commands = async (c: Redis) => Number(/total_commands_processed:(\d+)/.exec(await c.info('stats'))?.[1] ?? 0)
const before = await commands(probe)
const started = performance.now()
const accepted = await fetch(`${base}/v1/jobs/images`, {method: 'POST', body: form})
const {id} = (await accepted.json()) as {id: string}
const submitted = performance.now()

async function progress(): Promise<{status: string; progress: {items_done: number; chunks_done: number; chunks_total: number}} | undefined> {
  const r = await fetch(`${base}/v1/jobs/${id}`)
  return r.status === 200 ? ((await r.json()) as never) : undefined
}
async function until(check: (p: NonNullable<Awaited<ReturnType<typeof progress>>>) => boolean): Promise<void> {
  for (;;) {
    const p = await progress()
    if (p && check(p)) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

await until((p) => p.progress.chunks_done >= 3)
await workers[0].kill('SIGKILL')
const killedAt = performance.now()
await until((p) => p.progress.chunks_done >= Math.ceil(p.progress.chunks_total / 2))
const commandsBeforeRestart = await commands(probe)
probe.disconnect()
await redis.kill('SIGKILL')
redis = await startRedis(dir, redisPort)
const restartedAt = performance.now()
await until((p) => p.status === 'done')
const finished = performance.now()

const client = new Redis(redisUrl)
// Redis counts from 0 again after its restart.
const after = commandsBeforeRestart + (await commands(client))
const linesBytes = Number(await client.call('MEMORY', 'USAGE', `mod:imagejob:${id}:lines`, 'SAMPLES', '0'))
const text = await (await fetch(`${base}/v1/jobs/${id}/results`)).text()
const lines = text.trimEnd().split('\n').map((l) => JSON.parse(l) as {index: number; source: string; is_safe: boolean})
const inOrder = lines.length === ITEMS && lines.every((l, i) => l.index === i && l.source === `${i}.png` && l.is_safe === (i % 7 !== 0))
client.disconnect()

table([
  ['', 'value'],
  ['load average (1 min) at the end', load()],
  ['upload and accept (202)', `${((submitted - started) / 1000).toFixed(1)} s`],
  ['accepted to done', `${((finished - submitted) / 1000).toFixed(1)} s (a worker killed at ${((killedAt - submitted) / 1000).toFixed(1)} s; Redis back at ${((restartedAt - submitted) / 1000).toFixed(1)} s)`],
  ['images per second, accepted to done', (ITEMS / ((finished - submitted) / 1000)).toFixed(0)],
  ['lines', `${lines.length} of ${ITEMS}, ${inOrder ? 'each once, in order, right verdict' : 'WRONG'}`],
  ['Redis commands per item (whole job)', ((after - before) / ITEMS).toFixed(2)],
  ['Redis bytes per stored line (MEMORY USAGE of the lines hash / items)', (linesBytes / ITEMS).toFixed(0)],
])
process.stdout.write(`${inOrder ? 'PASS' : 'FAIL'} image-jobs: ${ITEMS} items, exactly one line each after a worker kill and a Redis restart\n`)

await stopAll()
rmSync(dir, {recursive: true, force: true})
process.exit(inOrder ? 0 : 1)

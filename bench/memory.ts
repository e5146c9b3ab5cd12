/**
 * memory: what `mod serve` holds on the default path (CLIP + the embedded NSFW specialist, the `fast` stand-in,
 * warm caches: each precision is started once first), after warm-up requests (POST /v1/moderate of the 1280x720 JPEG, four at once, so that onnxruntime's arenas and
 * the allocators' pools are as a serving worker has them).
 *
 * 1. One worker (`mod serve --workers 1`: the serving process is the worker) with fp32 and with int8: its PSS
 *    (/proc/<pid>/smaps_rollup: a page shared by k processes counts 1/k in each), of it anonymous (the process's
 *    own) and file pages (mapped weights, libraries), and each mapped model file's share: weights that onnxruntime
 *    maps from MOD_CACHE_DIR are file pages the workers share; weights it copies are anonymous, one copy a worker.
 * 2. `mod serve --workers 4` (fp32, the default): the PSS of the primary and its workers summed, against
 *    `--workers 1`. Target: <= 1.5 x. Then each worker's own memory by kind (V8's heap from /metrics, glibc's main
 *    heap and the other anonymous mappings from /proc/<pid>/smaps), and the floor a miss leaves.
 * 3. The same servers again once each worker has answered STEADY_REQUESTS: what they hold under sustained load, and
 *    the ratio then.
 */
import './no-telemetry.js'

import {request} from 'node:http'
import {readFile} from 'node:fs/promises'
import {relative} from 'node:path'

import {
  anonymousPss,
  CACHE_DIR,
  childrenOf,
  ensureImages,
  HD_JPEG,
  header,
  load,
  memoryByMapping,
  multipartBody,
  pssOf,
  requireStandin,
  residentMiB,
  ROOT,
  saveResults,
  startServer,
  table,
  treePss,
  verdict,
  type Mapped,
  type Variant,
} from './lib.js'

/** PSS of `--workers 4` over that of `--workers 1`. */
const CLUSTER_TARGET = 1.5
/** Warm-up requests per worker. */
const WARM_REQUESTS = 5
/**
 * Requests per worker before the steady-state figure: a serving process's V8 heap limits settle after a few hundred
 * requests (the heap growing factor of src/server/heap.ts), so the memory after 5 is not yet what it holds under
 * sustained load.
 */
const STEADY_REQUESTS = 300
/**
 * Requests sent at once in each warm-up round, whatever the number of workers: a worker runs the images that come
 * together in one batch, whose activations its onnxruntime arena keeps, so every server is warmed by the same
 * concurrent load (the 4 clients of bench/http.ts --overlap); one request a round would leave `--workers 1` with
 * the arena of single images while the workers of `--workers 4` get several at once.
 */
const WARM_ROUND = 4

header('memory', `PSS of mod serve on the default path after ${WARM_REQUESTS} requests a worker`)
requireStandin()
await ensureImages()
const upload = multipartBody(await readFile(HD_JPEG), 'hd.jpg')

/**
 * POSTs the JPEG on a connection of its own: the cluster's primary hands out connections, not requests, so a
 * kept-alive connection would warm one worker only.
 */
function moderateOnce(url: string): Promise<number> {
  return new Promise((done, fail) => {
    const req = request(`${url}/v1/moderate`, {method: 'POST', agent: false, headers: {'content-type': upload.contentType, 'content-length': upload.body.length}}, (res) => {
      res.resume()
      res.once('end', () => done(res.statusCode ?? 0))
    })
    req.once('error', fail)
    req.end(upload.body)
  })
}

/** GET /metrics → the value of one sample (summed over the workers by the primary). */
async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text()
  const line = text.split('\n').find((l) => l.startsWith(`${name} `))
  return Number(line?.split(' ')[1] ?? Number.NaN)
}

/**
 * Mapped model files (the stand-in, the shipped specialist, the cache's graphs and weights): a cache entry by its
 * model's name (`ort/vision_model/weights.bin`), any other file by its path under the repository.
 */
function modelFiles(byMapping: Map<string, Mapped>): Map<string, Mapped> {
  const files = new Map<string, Mapped>()
  for (const [name, m] of byMapping) {
    if (!/\.(onnx|bin)$/.test(name) && !name.startsWith(CACHE_DIR)) continue
    const cached = /\/ort\/([^/]+?)-[0-9a-f]{16}-[^/]+\/([^/]+)$/.exec(name)
    files.set(cached ? `cache: ort/${cached[1]}/${cached[2]}` : relative(ROOT, name), m)
  }
  return files
}

interface Served {
  label: string
  workers: number
  precision: Variant
  /** Summed over the primary and its workers. */
  pss: number
  anon: number
  file: number
  /** The primary's PSS (0 with one worker: the serving process is the worker). */
  primary: number
  /** One worker's memory (the mean over workers), in MiB. */
  worker: {pss: number; anon: number; file: number; rss: number; v8Heap: number; mallocHeap: number; otherAnon: number}
  /** Warm-up requests each worker answered. */
  requests: number[]
  /** The first worker's mapped model files. */
  files: Map<string, Mapped>
  /** After STEADY_REQUESTS a worker: the PSS summed, one worker's (the mean), and the requests each answered. */
  steady: {pss: number; worker: number; requests: number[]}
}

/** Requests to /v1/moderate answered so far by each of these processes (the pid of the access log's lines). */
function answeredBy(log: string, pids: number[]): number[] {
  const lines = log.split('\n').filter((line) => line.includes('"path":"/v1/moderate"'))
  return pids.map((pid) => lines.filter((line) => line.includes(`"pid":${pid},`)).length)
}

/**
 * Sends rounds of WARM_ROUND requests at once (or one a worker, if more), each on a new connection, until every
 * worker has answered `count`: the primary hands a queued connection to the first worker that takes it, not to
 * each in turn.
 */
async function answerUntil(server: {url: string; log(): string}, pids: number[], count: number): Promise<void> {
  const round = Math.max(WARM_ROUND, pids.length)
  for (let sent = 0; Math.min(...answeredBy(server.log(), pids)) < count; sent += round) {
    if (sent >= 8 * count * pids.length + 40 * round) throw new Error(`requests answered by each worker ${answeredBy(server.log(), pids).join(', ')} after ${sent}`)
    const statuses = await Promise.all(Array.from({length: round}, () => moderateOnce(server.url)))
    const failed = statuses.find((s) => s !== 200)
    if (failed !== undefined) throw new Error(`warm-up request answered ${failed}`)
    // The access log line of the last answer may still be on its way through the pipe.
    await new Promise((done) => setTimeout(done, 50))
  }
}

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length

/** The memory once every worker has answered STEADY_REQUESTS. */
async function steadyState(server: {pid: number; url: string; log(): string}, pids: number[]): Promise<Served['steady']> {
  await answerUntil(server, pids, STEADY_REQUESTS)
  const own = await Promise.all(pids.map(async (pid) => (await pssOf(pid)).pss))
  return {pss: (await treePss(server.pid)).pss, worker: mean(own), requests: answeredBy(server.log(), pids)}
}

async function serve(workers: number, precision: Variant): Promise<Served> {
  const server = await startServer(['--workers', String(workers)], {MOD_PRECISION: precision})
  try {
    const pids = workers === 1 ? [server.pid] : await childrenOf(server.pid)
    await answerUntil(server, pids, WARM_REQUESTS)
    const tree = await treePss(server.pid)
    const own = await Promise.all(
      pids.map(async (pid) => ({...(await pssOf(pid)), ...(await anonymousPss(pid)), rss: (await residentMiB(pid)).rss})),
    )
    // V8's heap is anonymous memory outside [heap]; prom-client's gauge is summed over the workers.
    const v8Heap = (await metric(server.url, 'nodejs_heap_size_total_bytes')) / 2 ** 20 / workers
    const anon = mean(own.map((o) => o.anon))
    const mallocHeap = mean(own.map((o) => o.mallocHeap))
    return {
      label: `${precision}, --workers ${workers}`,
      workers,
      precision,
      pss: tree.pss,
      anon: tree.anon,
      file: tree.file,
      primary: workers === 1 ? 0 : (await pssOf(server.pid)).pss,
      worker: {
        pss: mean(own.map((o) => o.pss)),
        anon,
        file: mean(own.map((o) => o.file)),
        rss: mean(own.map((o) => o.rss)),
        v8Heap,
        mallocHeap,
        otherAnon: anon - v8Heap - mallocHeap,
      },
      requests: answeredBy(server.log(), pids),
      files: modelFiles(await memoryByMapping(pids[0])),
      steady: await steadyState(server, pids),
    }
  } finally {
    await server.stop()
  }
}

// A first start builds what is missing from the graph cache, and glibc keeps much of what that freed: start each
// precision once before measuring, so that every measured start is a warm one.
for (const precision of ['fp32', 'int8'] as Variant[]) await (await startServer([], {MOD_PRECISION: precision})).stop()

const fp32 = await serve(1, 'fp32')
const int8 = await serve(1, 'int8')
const four = await serve(4, 'fp32')
const all = [fp32, int8, four]
const mib = (v: number) => `${v.toFixed(0)} MiB`

process.stdout.write('\n')
table([
  ['one worker (mean over workers)', 'PSS', 'of it anonymous', 'file pages', 'RSS'],
  ...all.map((s) => [s.label, mib(s.worker.pss), mib(s.worker.anon), mib(s.worker.file), mib(s.worker.rss)]),
])
process.stdout.write('\n')
table([
  ['mapped model files of a worker', 'resident', 'PSS', 'private copies'],
  ...all.flatMap((s) => [...s.files].map(([path, m]) => [`${s.label}: ${path}`, mib(m.rss), mib(m.pss), mib(m.anonymous)])),
])
process.stdout.write('\n')
table([
  ['mod serve', 'warm-up requests a worker', 'PSS total', 'of it anonymous', 'file pages', 'primary', 'vs --workers 1'],
  ...[fp32, four].map((s) => [s.label, s.requests.join(' '), mib(s.pss), mib(s.anon), mib(s.file), mib(s.primary), (s.pss / fp32.pss).toFixed(2)]),
])
process.stdout.write('\n')
table([
  [`after ${STEADY_REQUESTS} requests a worker`, 'requests a worker', 'PSS total', 'one worker (mean)', 'growth since warm-up', 'vs --workers 1'],
  ...all.map((s) => [
    s.label,
    s.steady.requests.join(' '),
    mib(s.steady.pss),
    mib(s.steady.worker),
    mib(s.steady.pss - s.pss),
    s.precision === 'fp32' ? (s.steady.pss / fp32.steady.pss).toFixed(2) : '',
  ]),
])
process.stdout.write('\n')
table([
  ["one worker's own memory (mean)", 'anonymous PSS', 'V8 heap', 'glibc main heap', 'other anonymous'],
  ...all.map((s) => [s.label, mib(s.worker.anon), mib(s.worker.v8Heap), mib(s.worker.mallocHeap), mib(s.worker.otherAnon)]),
])
process.stdout.write(
  "V8 heap: the code and objects of the loaded modules; glibc main heap: what the main thread mallocs (onnxruntime's\n" +
    "graphs and kernels, libvips); other anonymous: the other threads' malloc arenas, onnxruntime's memory arenas\n" +
    '(activations), weights it copied out of their files, thread stacks. Cluster workers run with MALLOC_ARENA_MAX=2,\n' +
    'MALLOC_MMAP_THRESHOLD_=1048576 and --max-semi-space-size=4. The specialist\'s large model (InceptionV3) runs only\n' +
    "on images its small model passes; this JPEG is not one, so its weights are mapped but not read and it has no arena.\n" +
    `load ${load()}\n\n`,
)

// What is left once the weights are shared: each worker's own memory, the shared pages once and the primary.
const w = four.worker
const floor = (four.file + four.primary + 4 * (w.v8Heap + w.mallocHeap)) / fp32.pss
const left =
  `floor ${floor.toFixed(2)} (shared file pages ${mib(four.file)} + primary ${mib(four.primary)} + 4 x (V8 heap ${mib(w.v8Heap)} + ` +
  `glibc main heap ${mib(w.mallocHeap)})); also left per worker: ${mib(w.otherAnon)} other anonymous. Tried: onnxruntime's arena off ` +
  '(about 0.15 lower, but requests 5-6% slower in cluster workers and 4 clients 8% fewer images/s), a smaller young generation for the ' +
  'inference thread (within noise); kept: weights mapped from the graph cache, two malloc arenas, a 1 MiB mmap threshold, 4 MiB semi-spaces'
process.stdout.write(`memory: one worker's PSS after warm-up: fp32 ${mib(fp32.pss)}, int8 ${mib(int8.pss)}\n`)
process.stdout.write(`memory: one worker's PSS after ${STEADY_REQUESTS} requests: fp32 ${mib(fp32.steady.worker)}, int8 ${mib(int8.steady.worker)}\n`)
const verdicts = [
  verdict('memory', `--workers 4 PSS ${mib(four.pss)}, --workers 1 ${mib(fp32.pss)}`, 'ratio', four.pss / fp32.pss, 'max', CLUSTER_TARGET, '', 2, left),
  verdict(
    'memory',
    `after ${STEADY_REQUESTS} requests a worker: --workers 4 PSS ${mib(four.steady.pss)}, --workers 1 ${mib(fp32.steady.pss)}`,
    'ratio',
    four.steady.pss / fp32.steady.pss,
    'max',
    CLUSTER_TARGET,
    '',
    2,
  ),
]
const record = (s: Served) => ({...s, files: Object.fromEntries(s.files)})
await saveResults('memory', verdicts, {fp32: record(fp32), int8: record(int8), workers4: record(four)})

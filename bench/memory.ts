/**
 * memory: resident memory (VmRSS from /proc/<pid>/status) of one serving worker (`mod serve --workers 1`,
 * where the serving process is the worker) after warm-up: ready, then 20 requests. fp32 three times (glibc's
 * allocator keeps a varying share of the memory freed while the model loads, so one start is not
 * representative), fp32 once more with MALLOC_MMAP_THRESHOLD_ fixed (large blocks then go back to the
 * system when freed), and the int8 and fp16 encoders once each. Target: <= 450 MiB with fp32.
 *
 * Then `mod serve --workers N` for N = 1, 2, 4 (warm graph cache, fp32, the default specialist on): the PSS of
 * the primary and its workers summed (/proc/<pid>/smaps_rollup: a page shared by k processes counts 1/k in
 * each), after 5 requests per worker. The workers map the cached weights file (session.ts), so they share one
 * copy of the weights. Target: N = 4 <= 1.4 x N = 1. Then each worker's own memory by kind (V8's heap from /metrics,
 * glibc's main heap and the other anonymous mappings from /proc/<pid>/smaps), the floor a miss leaves, and N = 1
 * once more with the settings the primary gives its workers (MALLOC_*, --max-semi-space-size), for comparison.
 */
import './no-telemetry.js'

import {readFile} from 'node:fs/promises'

import {
  ensureImages,
  HD_JPEG,
  header,
  load,
  median,
  moderateOnce,
  multipartBody,
  requireStandin,
  residentMiB,
  treePss,
  anonymousPss,
  childrenOf,
  pssOf,
  saveResults,
  STANDIN_DIR,
  startServer,
  table,
  verdict,
  type Variant,
} from './lib.js'

const TARGET = 450
const CLUSTER_SIZES = [1, 2, 4]
const WARM_REQUESTS_PER_WORKER = 5
/** PSS of 4 workers over that of 1. */
const CLUSTER_TARGET = 1.4
const WARM_REQUESTS = 20
const FP32_STARTS = 3
/** Large allocations (the model's temporary copies while loading) are mmapped, so freeing returns them. */
const MMAP_THRESHOLD = {MALLOC_MMAP_THRESHOLD_: String(1 << 20)}

header('memory', `resident memory of one serving worker after ${WARM_REQUESTS} requests`)
requireStandin()
await ensureImages()
const upload = multipartBody(await readFile(HD_JPEG), 'hd.jpg')

interface Sample {
  label: string
  ready: number
  warm: number
  peak: number
  anon: number
}

async function sample(label: string, env: Record<string, string> = {}): Promise<Sample> {
  const server = await startServer([], env)
  try {
    const ready = await residentMiB(server.pid)
    for (let i = 0; i < WARM_REQUESTS; i++) {
      const status = await moderateOnce(server.url, upload)
      if (status !== 200) throw new Error(`warm-up request answered ${status}`)
    }
    const warm = await residentMiB(server.pid)
    return {label, ready: ready.rss, warm: warm.rss, peak: warm.peak, anon: warm.anon}
  } finally {
    await server.stop()
  }
}

const samples: Sample[] = []
for (let i = 0; i < FP32_STARTS; i++) samples.push(await sample(`fp32 start ${i + 1}`))
samples.push(await sample('fp32, MALLOC_MMAP_THRESHOLD_=1MiB', MMAP_THRESHOLD))
const offered = JSON.parse(await readFile(`${STANDIN_DIR}/manifest.json`, 'utf8')) as {variants?: Record<string, unknown>}
for (const variant of ['int8', 'fp16'] as Variant[]) {
  if (offered.variants?.[variant]) samples.push(await sample(variant, {MOD_PRECISION: variant}))
}

const mib = (v: number) => `${v.toFixed(0)} MiB`
table([['worker', 'ready', 'after warm-up', 'of it anonymous', 'peak (VmHWM)'], ...samples.map((s) => [s.label, mib(s.ready), mib(s.warm), mib(s.anon), mib(s.peak)])])
const weights = JSON.parse(await readFile(`${STANDIN_DIR}/manifest.json`, 'utf8')) as {files: {role: string; size: number}[]}
const imageWeights = (weights.files.find((f) => f.role === 'image_encoder')?.size ?? 0) / 2 ** 20
process.stdout.write(`\nfp32 image encoder weights alone: ${mib(imageWeights)} (the text encoder is not loaded on a warm prompt cache)\n\n`)

interface Cluster {
  label: string
  workers: number
  pss: number
  anon: number
  file: number
  processes: number
  /** The primary's PSS (0 with one worker: the serving process is the worker). */
  primary: number
  /** One worker's own memory, the mean over workers, in MiB. */
  worker: {anon: number; v8Heap: number; mallocHeap: number; otherAnon: number}
}

/** GET /metrics → the value of one sample (summed over the workers by the primary). */
async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text()
  const line = text.split('\n').find((l) => l.startsWith(`${name} `))
  return Number(line?.split(' ')[1] ?? Number.NaN)
}

async function cluster(workers: number, label = `N = ${workers}`, env: Record<string, string> = {}): Promise<Cluster> {
  const server = await startServer(['--workers', String(workers)], env)
  try {
    // Requests in parallel, so that the primary hands them to every worker (round robin).
    await Promise.all(
      Array.from({length: workers}, async () => {
        for (let i = 0; i < WARM_REQUESTS_PER_WORKER; i++) {
          const status = await moderateOnce(server.url, upload)
          if (status !== 200) throw new Error(`warm-up request answered ${status}`)
        }
      }),
    )
    const tree = await treePss(server.pid)
    const workerPids = workers === 1 ? [server.pid] : await childrenOf(server.pid)
    const own = await Promise.all(workerPids.map(async (pid) => ({...(await pssOf(pid)), ...(await anonymousPss(pid))})))
    const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length
    const anon = mean(own.map((o) => o.anon))
    const mallocHeap = mean(own.map((o) => o.mallocHeap))
    // V8's heap is anonymous memory outside [heap]; prom-client's gauge is summed over the workers.
    const v8Heap = (await metric(server.url, 'nodejs_heap_size_total_bytes')) / 2 ** 20 / workers
    return {
      label,
      workers,
      ...tree,
      primary: workers === 1 ? 0 : (await pssOf(server.pid)).pss,
      worker: {anon, v8Heap, mallocHeap, otherAnon: anon - v8Heap - mallocHeap},
    }
  } finally {
    await server.stop()
  }
}

const clusters: Cluster[] = []
for (const n of CLUSTER_SIZES) clusters.push(await cluster(n))
// A single process given the settings the primary gives its workers (the documented environment for it).
const WORKER_SETTINGS = {MALLOC_MMAP_THRESHOLD_: '1048576', MALLOC_ARENA_MAX: '2', NODE_OPTIONS: '--max-semi-space-size=4'}
const tuned = await cluster(1, "N = 1, the workers' settings", WORKER_SETTINGS)
clusters.push(tuned)
const one = clusters[0].pss
process.stdout.write('\n')
table([
  ['mod serve --workers N', 'processes', 'PSS total', 'of it anonymous', 'file pages', 'primary', 'vs N = 1'],
  ...clusters.map((c) => [c.label, c.processes, mib(c.pss), mib(c.anon), mib(c.file), mib(c.primary), (c.pss / one).toFixed(2)]),
])
process.stdout.write('\n')
table([
  ['one worker\'s own memory (mean)', 'anonymous PSS', 'V8 heap', 'glibc main heap', 'other anonymous'],
  ...clusters.map((c) => [c.label, mib(c.worker.anon), mib(c.worker.v8Heap), mib(c.worker.mallocHeap), mib(c.worker.otherAnon)]),
])
process.stdout.write(
  'V8 heap: the code and objects of the loaded modules; glibc main heap: what the main thread mallocs (onnxruntime\'s\n' +
    'graphs and kernels, libvips); other anonymous: the other threads\' malloc arenas, onnxruntime\'s memory arenas\n' +
    '(activations), thread stacks. Cluster workers run with MALLOC_ARENA_MAX=2 and --max-semi-space-size=4.\n',
)
const four = clusters.find((c) => c.workers === 4) as Cluster
process.stdout.write(
  `--workers 4 against a single process given the workers' settings ` +
    `(${Object.entries(WORKER_SETTINGS).map(([k, v]) => `${k}=${v}`).join(' ')}): ${mib(four.pss)} / ${mib(tuned.pss)} = ` +
    `${(four.pss / tuned.pss).toFixed(2)}\nload ${load()}\n\n`,
)

const fp32 = median(samples.slice(0, FP32_STARTS).map((s) => s.warm))
// What is left once the weights are shared: each worker's V8 heap and glibc main heap are those of a node process
// that has loaded the engine and its sessions; the floor counts them, the shared pages and the primary.
const w = four.worker
const floor = (four.file + four.primary + 4 * (w.v8Heap + w.mallocHeap)) / one
const left =
  `floor ${floor.toFixed(2)} (shared file pages ${mib(four.file)} + primary ${mib(four.primary)} + 4 x (V8 heap ${mib(w.v8Heap)} + ` +
  `glibc main heap ${mib(w.mallocHeap)})); also left per worker: ${mib(w.otherAnon)} other anonymous (onnxruntime's arenas, thread arenas, stacks)`
const verdicts = [
  verdict('memory', `fp32 worker after warm-up, median of ${FP32_STARTS} starts`, 'VmRSS', fp32, 'max', TARGET, ' MiB', 0),
  verdict('memory', `--workers 4 PSS ${mib(four.pss)}, --workers 1 ${mib(one)}`, 'ratio', four.pss / one, 'max', CLUSTER_TARGET, '', 2, left),
]
await saveResults('memory', verdicts, {samples, imageWeightsMiB: imageWeights, clusters})

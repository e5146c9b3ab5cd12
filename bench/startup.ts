/**
 * startup: wall time of `mod scan one.jpg` with warm caches (prompt embeddings and the optimised graph in
 * MOD_CACHE_DIR; target <= 1.0 s), and of `mod serve` from spawn to a /health answer with model_loaded true
 * (target <= 1.5 s). Median of several runs each, after one run that warms the caches and the page cache.
 * Then `mod scan one.jpg` with and without the cached graph, taking turns (the second cache folder holds the
 * same prompt embeddings and a file where `ort/` would be, so no graph is cached there).
 */
import './no-telemetry.js'

import {cp, mkdir, rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {CACHE_DIR, ensureImages, HD_JPEG, header, median, ms, OUT, requireStandin, runCli, saveResults, startServer, table, verdict} from './lib.js'

const RUNS = 7
const SERVE_RUNS = 5
const PAIRED_RUNS = 6
const SCAN_TARGET = 1.0
const SERVE_TARGET = 1.5

header('startup', 'mod scan one.jpg and mod serve to a ready /health, warm prompt and graph caches')
requireStandin()
await ensureImages()

const warm = await runCli(['scan', HD_JPEG, '--json'])
if (warm.code > 1) throw new Error(`mod scan failed (exit ${warm.code}):\n${warm.stderr}`)
const scans: number[] = []
for (let i = 0; i < RUNS; i++) scans.push((await runCli(['scan', HD_JPEG, '--json'])).ms)

/** Spawn → the first /health answer saying the model is loaded (with preloading, the port opens after the load). */
async function serveReady(): Promise<number> {
  const started = performance.now()
  const server = await startServer()
  try {
    for (;;) {
      const health = (await (await fetch(`${server.url}/health`)).json()) as {model_loaded?: boolean}
      if (health.model_loaded) return performance.now() - started
      await new Promise((r) => setTimeout(r, 20))
    }
  } finally {
    await server.stop()
  }
}
const serves: number[] = []
for (let i = 0; i < SERVE_RUNS; i++) serves.push(await serveReady())

const noGraph = join(OUT, 'cache-no-graph')
await rm(noGraph, {recursive: true, force: true})
await mkdir(noGraph, {recursive: true})
await cp(join(CACHE_DIR, 'prompts'), join(noGraph, 'prompts'), {recursive: true})
await writeFile(join(noGraph, 'ort'), 'no graph cache here\n')
const withGraph: number[] = []
const withoutGraph: number[] = []
for (let i = 0; i < PAIRED_RUNS; i++) {
  withGraph.push((await runCli(['scan', HD_JPEG, '--json'])).ms)
  withoutGraph.push((await runCli(['scan', HD_JPEG, '--json'], {MOD_CACHE_DIR: noGraph})).ms)
}

table([
  ['command', 'median', 'min', 'max', 'runs'],
  ['mod scan one.jpg, graph cached (turns)', ms(median(withGraph)), ms(Math.min(...withGraph)), ms(Math.max(...withGraph)), PAIRED_RUNS],
  ['mod scan one.jpg, no graph cache (turns)', ms(median(withoutGraph)), ms(Math.min(...withoutGraph)), ms(Math.max(...withoutGraph)), PAIRED_RUNS],
  ['mod scan one.jpg --json', ms(median(scans)), ms(Math.min(...scans)), ms(Math.max(...scans)), RUNS],
  ['mod serve → /health ready', ms(median(serves)), ms(Math.min(...serves)), ms(Math.max(...serves)), SERVE_RUNS],
])
process.stdout.write('\n')
const verdicts = [
  verdict('startup', 'mod scan one.jpg, warm caches', 'median wall', median(scans) / 1000, 'max', SCAN_TARGET, ' s'),
  verdict('startup', 'mod serve to a ready /health', 'median', median(serves) / 1000, 'max', SERVE_TARGET, ' s'),
]
await saveResults('startup', verdicts, {scanMs: scans, serveMs: serves, pairedScanMs: {withGraph, withoutGraph}})

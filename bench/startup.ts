/**
 * startup: wall time of `mod scan one.jpg` with a warm prompt cache (target <= 1.5 s), and of `mod serve`
 * from spawn to a /health answer with model_loaded true (target <= 3 s). Median of several runs each, after
 * one run that warms the prompt cache and the page cache.
 */
import './no-telemetry.js'

import {ensureImages, HD_JPEG, header, median, ms, requireStandin, runCli, saveResults, startServer, table, verdict} from './lib.js'

const RUNS = 7
const SERVE_RUNS = 5
const SCAN_TARGET = 1.5
const SERVE_TARGET = 3

header('startup', 'mod scan one.jpg and mod serve to a ready /health, warm prompt cache')
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

table([
  ['command', 'median', 'min', 'max', 'runs'],
  ['mod scan one.jpg --json', ms(median(scans)), ms(Math.min(...scans)), ms(Math.max(...scans)), RUNS],
  ['mod serve → /health ready', ms(median(serves)), ms(Math.min(...serves)), ms(Math.max(...serves)), SERVE_RUNS],
])
process.stdout.write('\n')
const verdicts = [
  verdict('startup', 'mod scan one.jpg, warm prompt cache', 'median wall', median(scans) / 1000, 'max', SCAN_TARGET, ' s'),
  verdict('startup', 'mod serve to a ready /health', 'median', median(serves) / 1000, 'max', SERVE_TARGET, ' s'),
]
await saveResults('startup', verdicts, {scanMs: scans, serveMs: serves})

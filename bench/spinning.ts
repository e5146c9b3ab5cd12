/**
 * spinning: the two sessions of the default path (CLIP's image encoder, then the NSFW specialist), bare on
 * ready tensors, one after the other, as mod opens them (idle intra-op threads block) against the same with
 * onnxruntime's default (idle threads spin for a while before blocking). With spinning, each session's idle
 * threads keep the cores busy while the other session computes. The two sides take turns (lib.ts interleave);
 * besides wall time per pair, the process's CPU time per pair shows the spinning itself, and moves little with
 * the load. Target: blocking pair <= 0.75 x spinning pair (paired ratio).
 */
import './no-telemetry.js'

import {barePair, ensureImages, header, interleave, load, median, ms, pairedRatio, requireStandin, saveResults, table, verdict} from './lib.js'

const WARMUP = 5
const TURNS = 10
const TARGET = 0.75

header('spinning', 'bare CLIP + NSFW specialist pair: idle intra-op threads blocking (mod) vs spinning (onnxruntime default)')
requireStandin()
await ensureImages()
const blocking = await barePair()
const spinning = await barePair({spinning: true})

/** Runs a pair and records the process CPU time it took, in ms. */
function withCpu(pair: () => Promise<unknown>, cpu: number[]): () => Promise<void> {
  return async () => {
    const before = process.cpuUsage()
    await pair()
    const used = process.cpuUsage(before)
    cpu.push((used.user + used.system) / 1000)
  }
}

for (let i = 0; i < WARMUP; i++) {
  await blocking.run()
  await spinning.run()
}
const cpu = {blocking: [] as number[], spinning: [] as number[]}
const t = await interleave({blocking: withCpu(() => blocking.run(), cpu.blocking), spinning: withCpu(() => spinning.run(), cpu.spinning)}, TURNS)
await blocking.release()
await spinning.release()

table([
  ['bare pair (CLIP + specialist)', 'wall median', 'min', 'CPU time median', 'runs'],
  ['idle threads block (mod)', ms(median(t.blocking)), ms(Math.min(...t.blocking)), ms(median(cpu.blocking)), t.blocking.length],
  ['idle threads spin (default)', ms(median(t.spinning)), ms(Math.min(...t.spinning)), ms(median(cpu.spinning)), t.spinning.length],
])
process.stdout.write(`\nCPU time per pair, spinning / blocking: ${(median(cpu.spinning) / median(cpu.blocking)).toFixed(2)}; load ${load()}\n\n`)
const v = verdict(
  'spinning',
  `pair ${ms(median(t.blocking))} blocking, ${ms(median(t.spinning))} spinning (CPU ${ms(median(cpu.blocking))} vs ${ms(median(cpu.spinning))}), load ${load()}`,
  'paired ratio',
  pairedRatio(t.blocking, t.spinning),
  'max',
  TARGET,
)
await saveResults('spinning', [v], {
  blocking: {median: median(t.blocking), cpu: median(cpu.blocking)},
  spinning: {median: median(t.spinning), cpu: median(cpu.spinning)},
})

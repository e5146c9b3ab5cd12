/**
 * `npm run bench [-- latency http …]`: prepares what the scripts need (the built CLI, the stand-in model with
 * its int8/fp16 variants, the test images, a warm prompt cache), then runs the named scripts (default: all)
 * one after another, each in its own process so that memory figures and thread pools start clean, and ends
 * with every script's verdict lines. Needs no network. `--build` rebuilds dist/ even when it exists. `verdicts`
 * runs only when named, and needs none of that preparation: photo sets instead (bench/verdicts.ts).
 */
import './no-telemetry.js'

import {spawnSync} from 'node:child_process'
import {existsSync} from 'node:fs'
import {readFile} from 'node:fs/promises'
import {join} from 'node:path'
import {parseArgs} from 'node:util'

import type {Manifest, Precision} from '../src/lib/model/manifest-types.js'
import {benchEngine, ensureImages, load, machine, readResults, ROOT, STANDIN_DIR} from './lib.js'

const SCRIPTS = ['latency', 'int8', 'spinning', 'shrink', 'http', 'headline', 'peer', 'folder', 'memory', 'startup', 'video', 'nsfw']
/**
 * Run only when named, with no stand-in: verdicts and canvas need photo sets this repository does not ship
 * (bench/verdicts.ts says which); answer-check needs only the toy model (npm run fixtures).
 */
const ON_DATA = ['verdicts', 'canvas', 'answer-check']

const {values, positionals} = parseArgs({allowPositionals: true, options: {build: {type: 'boolean', default: false}}})
const unknown = positionals.filter((p) => !SCRIPTS.includes(p) && !ON_DATA.includes(p))
if (unknown.length > 0) {
  process.stderr.write(`unknown bench script(s): ${unknown.join(', ')}; choose from ${[...SCRIPTS, ...ON_DATA].join(', ')}\n`)
  process.exit(2)
}
const chosen = positionals.length > 0 ? [...SCRIPTS, ...ON_DATA].filter((s) => positionals.includes(s)) : SCRIPTS

function step(what: string, command: string, args: string[]): void {
  process.stdout.write(`bench: ${what}\n`)
  const r = spawnSync(command, args, {cwd: ROOT, stdio: 'inherit'})
  if (r.status !== 0) {
    process.stderr.write(`bench: ${what} failed (exit ${r.status})\n`)
    process.exit(1)
  }
}

if (chosen.some((s) => SCRIPTS.includes(s))) {
  const built = ['dist/commands/scan.js', 'dist/commands/serve.js', 'oclif.manifest.json'].every((f) => existsSync(join(ROOT, f)))
  if (values.build || !built) step('building dist/ (npm run build)', 'npm', ['run', 'build'])
  step('stand-in model (scripts/standin.ts --variants)', process.execPath, ['--import', 'tsx', 'scripts/standin.ts', '--variants'])
  process.stdout.write('bench: test images in bench/out/\n')
  await ensureImages()
  // Warm prompt caches (each precision has its own): every script measures a warm start, as a deployed worker has.
  const {variants} = JSON.parse(await readFile(join(STANDIN_DIR, 'manifest.json'), 'utf8')) as Manifest
  for (const precision of ['fp32', ...Object.keys(variants ?? {})] as Precision[]) {
    const engine = benchEngine(precision)
    await engine.load()
    await engine.close()
  }
}

const started = Date.now()
const failed: string[] = []
for (const script of chosen) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', `${script}.ts`)], {cwd: ROOT, stdio: 'inherit'})
  if (r.status !== 0) failed.push(script)
}

const m = machine()
process.stdout.write(`\n== summary (${((Date.now() - started) / 60_000).toFixed(1)} min; ${m.cpu}, ${m.cores} cores, ${m.ram}, node ${m.node}, onnxruntime-node ${m.onnxruntime}; load now ${load()})\n`)
for (const r of (await readResults()).filter((r) => chosen.includes(r.script) && !failed.includes(r.script))) {
  for (const v of r.verdicts) process.stdout.write(`${v.line}\n`)
}
if (failed.length > 0) {
  process.stdout.write(`failed to run: ${failed.join(', ')}\n`)
  process.exit(1)
}

import {execFile} from 'node:child_process'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath, pathToFileURL} from 'node:url'

import * as ort from 'onnxruntime-node'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {sessionActivity} from '../../../src/lib/model/inference-thread.js'
import {openSession, sessionOptions} from '../../../src/lib/model/session.js'
import {buildVisionModel} from '../../../scripts/onnx/vit.js'
import {moduleFor, nodeArgs, SCRIPT_EXT} from '../../helpers/ts-script.js'

const TOY = join(import.meta.dirname, '..', '..', 'fixtures', 'models', 'toy', 'onnx', 'vision_model.onnx')
const BATCH = 8
const pixels = Float32Array.from({length: BATCH * 3 * 224 * 224}, (_, i) => ((i * 7919) % 1000) / 500 - 1)
const feeds = () => ({pixel_values: new ort.Tensor('float32', pixels, [BATCH, 3, 224, 224])})

const dir = mkdtempSync(join(tmpdir(), 'mod-inference-thread-'))
test.after(() => rmSync(dir, {recursive: true, force: true}))

/** A ViT of 256 tokens, 4 layers of width 256: some 0.8 GMAC an image, tens of ms on one thread, on a 64 x 64 input. */
const SLOW = {imageSize: 64, patchSize: 4, width: 256, layers: 4, heads: 4, mlpWidth: 1024, embeddingSize: 32}

test('the event loop keeps turning while a model infers: sessions run in a thread of their own', async () => {
  const path = join(dir, 'slow.onnx')
  writeFileSync(path, buildVisionModel(SLOW, 1))
  const session = await openSession(path, {threads: 1, keepArena: true})
  const input = () => ({pixel_values: new ort.Tensor('float32', new Float32Array(3 * 64 * 64).fill(0.5), [1, 3, 64, 64])})
  try {
    await session.run(input())
    let turns = 0
    let done = false
    const spin = () => {
      turns++
      if (!done) setImmediate(spin)
    }
    setImmediate(spin)
    const started = performance.now()
    await session.run(input())
    const ms = performance.now() - started
    done = true
    // On the main thread the run would hold the loop for all of it: one or two turns at most.
    assert.ok(turns > 5, `${turns} turns of the event loop during a run of ${ms.toFixed(1)} ms`)
  } finally {
    await session.release()
  }
})

test("a session in the thread gives what onnxruntime gives on the main thread; views are sent as their own part", async () => {
  const here = await ort.InferenceSession.create(TOY, sessionOptions({threads: 1, keepArena: false}))
  const there = await openSession(TOY, {threads: 1, keepArena: false})
  try {
    const one = pixels.subarray(3 * 224 * 224, 2 * 3 * 224 * 224)
    const input = {pixel_values: new ort.Tensor('float32', one, [1, 3, 224, 224])}
    const [a, b] = [await here.run(input), await there.run(input)]
    const name = here.outputNames[0]
    assert.equal(there.outputNames, here.outputNames)
    assert.equal(there.inputMetadata, here.inputMetadata)
    assert.equal([b[name].type, b[name].dims], [a[name].type, a[name].dims])
    assert.equal(Array.from(b[name].data as Float32Array), Array.from(a[name].data as Float32Array))
  } finally {
    await here.release()
    await there.release()
  }
})

test('a run that fails rejects with onnxruntime\'s message, and the session runs on; a released session refuses to run', async () => {
  const session = await openSession(TOY, {threads: 1, keepArena: false})
  const wrong = await session.run({nothing: new ort.Tensor('float32', new Float32Array(1), [1])}).catch((e: unknown) => e)
  assert.instance(wrong, Error)
  assert.match((wrong as Error).message, /nothing|input/i)
  const out = await session.run({pixel_values: new ort.Tensor('float32', pixels.subarray(0, 3 * 224 * 224), [1, 3, 224, 224])})
  assert.equal(out[session.outputNames[0]].dims[0], 1)
  await session.release()
  await session.release()
  const refused = await session.run(feeds()).catch((e: unknown) => e)
  assert.match((refused as Error).message, 'released')
})

test('the process counts, per model file, the sessions opened from it and the runs asked of them', async () => {
  const before = sessionActivity().get(TOY) ?? {opened: 0, runs: 0}
  const session = await openSession(TOY, {threads: 1, keepArena: false})
  const input = {pixel_values: new ort.Tensor('float32', pixels.subarray(0, 3 * 224 * 224), [1, 3, 224, 224])}
  await session.run(input)
  await session.run(input)
  await session.release()
  assert.equal(sessionActivity().get(TOY), {opened: before.opened + 1, runs: before.runs + 2})
})

test('the thread keeps a process alive while it works for it, and no longer: a script that opens a session and runs it prints the output and ends', async () => {
  const session = moduleFor(fileURLToPath(new URL('../../../src/lib/model/session.ts', import.meta.url)))
  const ort = createRequire(import.meta.url).resolve('onnxruntime-node')
  const script = join(dir, `only-inference${SCRIPT_EXT}`)
  writeFileSync(
    script,
    `import {openSession} from ${JSON.stringify(pathToFileURL(session).href)}
const ort = await import(${JSON.stringify(pathToFileURL(ort).href)})
const s = await openSession(${JSON.stringify(TOY)}, {threads: 1, keepArena: false})
const out = await s.run({pixel_values: new ort.Tensor('float32', new Float32Array(3 * 224 * 224), [1, 3, 224, 224])})
process.stdout.write(String(out[s.outputNames[0]].dims))
`,
  )
  const printed = await new Promise<string>((resolve, reject) =>
    execFile(process.execPath, nodeArgs(script), {timeout: 30_000}, (e, stdout, stderr) => (e ? reject(new Error(`${e.message}\n${stderr}`)) : resolve(stdout))),
  )
  assert.match(printed, /^1,\d+$/)
})

test('a process that leaves while the thread infers stops the thread between two runs first: no abort from onnxruntime (exit 134)', async () => {
  const model = join(dir, 'slow-leaving.onnx')
  writeFileSync(model, buildVisionModel(SLOW, 1))
  const session = moduleFor(fileURLToPath(new URL('../../../src/lib/model/session.ts', import.meta.url)))
  const workers = moduleFor(fileURLToPath(new URL('../../../src/lib/worker-module.ts', import.meta.url)))
  const ort = createRequire(import.meta.url).resolve('onnxruntime-node')
  const script = join(dir, `leaving${SCRIPT_EXT}`)
  // Runs queued without waiting, as a scan stopped by Ctrl-C leaves them; process.exit ends every thread at once.
  writeFileSync(
    script,
    `import {openSession} from ${JSON.stringify(pathToFileURL(session).href)}
import {stopThreadsBeforeExit} from ${JSON.stringify(pathToFileURL(workers).href)}
const ort = await import(${JSON.stringify(pathToFileURL(ort).href)})
const s = await openSession(${JSON.stringify(model)}, {threads: 1, keepArena: true})
const input = () => ({pixel_values: new ort.Tensor('float32', new Float32Array(3 * 64 * 64).fill(0.5), [1, 3, 64, 64])})
for (let i = 0; i < 40; i++) s.run(input()).catch(() => {})
await new Promise((r) => setTimeout(r, 100))
await stopThreadsBeforeExit()
process.exit(7)
`,
  )
  // Without the stop, every such exit aborts (the thread is always inside a run): one try tells.
  const r = await new Promise<{code: number | null; stderr: string}>((resolve) =>
    execFile(process.execPath, nodeArgs(script), {timeout: 30_000}, (e, _stdout, stderr) => resolve({code: e ? ((e as {code?: number}).code ?? null) : 0, stderr})),
  )
  assert.equal([r.code, r.stderr], [7, ''])
})

test.run()

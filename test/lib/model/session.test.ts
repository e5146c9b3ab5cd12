import {spawn, spawnSync} from 'node:child_process'
import {copyFile, mkdir, mkdtemp, readdir, readFile, rm, stat, utimes, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {pathToFileURL} from 'node:url'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {isModError} from '../../../src/lib/errors.js'
import * as ort from 'onnxruntime-node'

import {stopThreadsBeforeExit} from '../../../src/lib/worker-module.js'
import {cacheEntry, openSession, sessionOptions, type ModelSession} from '../../../src/lib/model/session.js'
import {nsfwModelDir} from '../../../src/lib/signals/nsfw/model.js'
import {createGraph} from '../../../scripts/onnx/graph.js'
import {buildVisionModel} from '../../../scripts/onnx/vit.js'
import {TINY_VISION} from '../../helpers/tiny-clip.js'
import {testUnless} from '../../helpers/skip.js'
import {moduleFor, nodeArgs, SCRIPT_EXT} from '../../helpers/ts-script.js'

const TOY = join(import.meta.dirname, '..', '..', 'fixtures', 'models', 'toy', 'onnx', 'vision_model.onnx')

/** Why a small disk of a test's own cannot be mounted here (unshare's user and mount namespaces, tmpfs), or undefined. */
function tmpfsProblem(): string | undefined {
  const probe = spawnSync('unshare', ['-rm', 'sh', '-c', 'mount -t tmpfs -o size=64k tmpfs /mnt'], {encoding: 'utf8'})
  return probe.status === 0 ? undefined : `no tmpfs in a mount namespace of its own (unshare -rm): ${(probe.stderr || String(probe.error)).trim()}`
}

test('every session runs on the CPU, sequentially, fully optimised, with the threads asked for, idle ones blocking', () => {
  assert.equal(sessionOptions({threads: 3, keepArena: true}), {
    executionProviders: ['cpu'],
    intraOpNumThreads: 3,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    enableCpuMemArena: true,
    enableMemPattern: true,
    extra: {session: {intra_op: {allow_spinning: '0'}}},
  })
  const short = sessionOptions({threads: 1, keepArena: false})
  assert.equal([short.enableCpuMemArena, short.enableMemPattern], [false, false])
})

test('opens an ONNX file', async () => {
  const session = await openSession(TOY, {threads: 1, keepArena: true})
  assert.equal(session.inputNames, ['pixel_values'])
  await session.release()
})

test('a file onnxruntime cannot load is invalid_config naming the file', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'mod-session-'))
  const path = join(dir, 'broken.onnx')
  await writeFile(path, 'not a model')
  try {
    const e = await openSession(path, {threads: 1, keepArena: false}).catch((x: unknown) => x)
    assert.ok(isModError(e) && e.code === 'invalid_config', String(e))
    assert.match((e as Error).message, `cannot load ${path}`)
  } finally {
    await rm(dir, {recursive: true, force: true})
  }
})

/** The toy encoder's output for a fixed input: a cached graph must give exactly this. */
async function output(session: ModelSession): Promise<number[]> {
  const pixels = Float32Array.from({length: 3 * 224 * 224}, (_, i) => ((i * 7919) % 1000) / 500 - 1)
  const out = await session.run({pixel_values: new ort.Tensor('float32', pixels, [1, 3, 224, 224])})
  return Array.from(out[session.outputNames[0]].data as Float32Array)
}

async function withCache(fn: (model: string, cacheDir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'mod-session-cache-'))
  const model = join(dir, 'vision_model.onnx')
  await copyFile(TOY, model)
  try {
    await fn(model, join(dir, 'cache'))
  } finally {
    await rm(dir, {recursive: true, force: true})
  }
}

test('with a cache folder, the optimised graph is saved under ort/ and later sessions start from it, with the same outputs', async () => {
  await withCache(async (model, cacheDir) => {
    const plain = await openSession(model, {threads: 1, keepArena: true})
    const expected = await output(plain)
    await plain.release()
    const first = await openSession(model, {threads: 1, keepArena: true, cacheDir})
    assert.equal(await output(first), expected)
    await first.release()
    const entry = await cacheEntry(model, {threads: 1, keepArena: true}, cacheDir)
    assert.equal(await readdir(join(cacheDir, 'ort')), [entry.dir.split('/').pop()])
    const saved = await readFile(join(entry.dir, 'model.onnx'))
    const second = await openSession(model, {threads: 2, keepArena: false, cacheDir})
    assert.equal(await output(second), expected)
    await second.release()
    // Threads and memory options do not change the graph: the same entry served the second session.
    assert.equal(await readFile(join(entry.dir, 'model.onnx')), saved)
  })
})

test('the cache also holds the weights prepacked for this CPU, which sessions run on from the mapped file, with the same outputs', async () => {
  await withCache(async (model, cacheDir) => {
    await writeFile(model, buildVisionModel(TINY_VISION, 1))
    const size = TINY_VISION.imageSize
    const pixels = Float32Array.from({length: 3 * size * size}, (_, i) => Math.sin(i))
    const run = async (session: ModelSession) => {
      const out = await session.run({pixel_values: new ort.Tensor('float32', pixels, [1, 3, size, size])})
      await session.release()
      return Array.from(out.image_embeds.data as Float32Array)
    }
    const expected = await run(await openSession(model, {threads: 1, keepArena: true}))
    assert.equal(await run(await openSession(model, {threads: 1, keepArena: true, cacheDir})), expected)
    assert.equal(await run(await openSession(model, {threads: 1, keepArena: true, cacheDir})), expected)
    const entry = await cacheEntry(model, {threads: 1, keepArena: true}, cacheDir)
    // Prepacked weights are saved as initializers named after the node that packed them.
    assert.ok((await readFile(join(entry.dir, 'model.onnx'))).includes('prepacked_0'))
  })
})

/** Bytes of `file` resident in this process's mappings of it (/proc/self/smaps). */
async function residentBytes(file: string): Promise<number> {
  let mapped = ''
  let bytes = 0
  for (const line of (await readFile('/proc/self/smaps', 'utf8')).split('\n')) {
    const mapping = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line)
    if (mapping) mapped = mapping[1]
    else if (mapped === file) bytes += Number(/^Rss:\s+(\d+) kB/.exec(line)?.[1] ?? 0) * 1024
  }
  return bytes
}

testUnless(
  process.platform === 'linux' ? undefined : "reads the process's mappings from /proc/self/smaps (Linux)",
  "a convolutional model runs on its weights in the cache's mapped file, not on copies in the process's own memory",
  async () => {
    // The NSFW specialist's small model: at load, onnxruntime lays convolution weights out for the CPU's vector
    // width; a graph saved before that step would leave the mapped weights untouched (14% resident) and run on copies.
    await withCache(async (model, cacheDir) => {
      await copyFile(join(nsfwModelDir(), 'nsfw-mobilenet-v2.onnx'), model)
      const pixels = new ort.Tensor('float32', Float32Array.from({length: 224 * 224 * 3}, (_, i) => (Math.sin(i) + 1) / 2), [1, 224, 224, 3])
      const run = async (session: ModelSession) => Array.from((await session.run({pixels})).probabilities.data as Float32Array)
      const plain = await openSession(model, {threads: 1, keepArena: false})
      const expected = await run(plain)
      await plain.release()
      await (await openSession(model, {threads: 1, keepArena: false, cacheDir})).release()
      const cached = await openSession(model, {threads: 1, keepArena: false, cacheDir})
      try {
        assert.equal(await run(cached), expected)
        const weights = join((await cacheEntry(model, {threads: 1, keepArena: false}, cacheDir)).dir, 'weights.bin')
        const share = (await residentBytes(weights)) / (await stat(weights)).size
        assert.ok(share >= 0.8, `${(share * 100).toFixed(0)}% of the mapped weights are resident`)
      } finally {
        await cached.release()
      }
    })
  },
)

test('a corrupt cached graph is rebuilt, not fatal: the session opens and the file is rewritten', async () => {
  await withCache(async (model, cacheDir) => {
    const options = {threads: 1, keepArena: true, cacheDir}
    await (await openSession(model, options)).release()
    const entry = await cacheEntry(model, options, cacheDir)
    const good = await readFile(join(entry.dir, 'model.onnx'))
    await writeFile(join(entry.dir, 'model.onnx'), 'garbage')
    const session = await openSession(model, options)
    assert.equal(session.inputNames, ['pixel_values'])
    await session.release()
    assert.equal(await readFile(join(entry.dir, 'model.onnx')), good)
  })
})

/** A graph with the toy's input and output names that loads but fails when run (a reshape to a size it cannot have). */
function failsWhenRun(outputName: string): Uint8Array {
  const g = createGraph('fails-when-run')
  const input = g.input('pixel_values', 'float32', ['batch', 3, 'height', 'width'])
  g.op('Reshape', [input, g.int64s([7, 7, 7])], {}, outputName)
  g.output(outputName, 'float32', [7, 7, 7])
  return g.encode()
}

test('a cached graph that loads but fails its first run (laid out for another CPU) is replaced by the model file, and its entry removed', async () => {
  await withCache(async (model, cacheDir) => {
    const options = {threads: 1, keepArena: true, cacheDir}
    const plain = await openSession(model, {threads: 1, keepArena: true})
    const expected = await output(plain)
    await plain.release()
    await (await openSession(model, options)).release()
    const entry = await cacheEntry(model, options, cacheDir)
    await writeFile(join(entry.dir, 'model.onnx'), failsWhenRun(plain.outputNames[0]))
    const session = await openSession(model, options)
    try {
      // Two runs asked together: the second waits for the first to find its session.
      const [a, b] = await Promise.all([output(session), output(session)])
      assert.equal([a, b], [expected, expected])
      assert.equal(await output(session), expected)
    } finally {
      await session.release()
    }
    assert.not.ok(await stat(entry.dir).then(() => true, () => false), 'the entry is removed')
    // The next session builds the entry again and runs on it.
    const next = await openSession(model, options)
    assert.equal(await output(next), expected)
    await next.release()
    assert.ok((await stat(join(entry.dir, 'model.onnx'))).size > 0)
  })
})

test("a cached session's first run cut off by the inference thread's stopping leaves the entry in place", async () => {
  await withCache(async (model, cacheDir) => {
    const options = {threads: 1, keepArena: true, cacheDir}
    await (await openSession(model, options)).release()
    const entry = await cacheEntry(model, options, cacheDir)
    const session = await openSession(model, options)
    await stopThreadsBeforeExit()
    const e = await output(session).catch((x: unknown) => x)
    assert.match(String(e), 'the inference thread stopped')
    assert.ok((await stat(join(entry.dir, 'model.onnx'))).size > 0, 'the entry is kept')
  })
})

test('a changed model file gets a new entry and its stale one is removed', async () => {
  await withCache(async (model, cacheDir) => {
    const options = {threads: 1, keepArena: true, cacheDir}
    await (await openSession(model, options)).release()
    const before = await cacheEntry(model, options, cacheDir)
    await utimes(model, new Date(), new Date(Date.now() + 60_000))
    const after = await cacheEntry(model, options, cacheDir)
    assert.is.not(after.dir, before.dir)
    await (await openSession(model, options)).release()
    assert.equal(await readdir(join(cacheDir, 'ort')), [after.dir.split('/').pop()])
  })
})

test("a build folder left by a process that is gone (or old) is removed by the next session, when built or read; a running process's is left alone", async () => {
  await withCache(async (model, cacheDir) => {
    const options = {threads: 1, keepArena: true, cacheDir}
    const entry = await cacheEntry(model, options, cacheDir)
    const gone = spawnSync('true').pid
    const running = spawn('sleep', ['30'])
    try {
      const killed = `${entry.dir}.tmp-${gone}-0badcafe`
      const building = `${entry.dir}.tmp-${running.pid}-600dcafe`
      const old = `${entry.dir}.tmp-old-build`
      for (const d of [killed, building, old]) await mkdir(d, {recursive: true})
      const hourAgo = new Date(Date.now() - 3600_000)
      await utimes(old, hourAgo, hourAgo)
      await (await openSession(model, options)).release()
      const left = async () => (await readdir(join(cacheDir, 'ort'))).sort()
      assert.equal(await left(), [entry.dir, building].map((d) => d.split('/').pop()).sort())
      // Killed after its entry was built by another: the entry read from the cache still clears it.
      await mkdir(killed)
      await (await openSession(model, options)).release()
      assert.equal(await left(), [entry.dir, building].map((d) => d.split('/').pop()).sort())
    } finally {
      running.kill()
    }
  })
})

test('a cache folder that cannot be written only means the session starts from the model file', async () => {
  await withCache(async (model, cacheDir) => {
    await writeFile(cacheDir, 'a file where the folder should be')
    const session = await openSession(model, {threads: 1, keepArena: true, cacheDir})
    assert.equal(session.inputNames, ['pixel_values'])
    await session.release()
  })
})

testUnless(
  tmpfsProblem(),
  'a cache folder on a full disk only means the session starts from the model file (not invalid_config from the failed build)',
  async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mod-session-full-'))
    try {
      const model = join(dir, 'slow.onnx')
      await writeFile(model, buildVisionModel({imageSize: 64, patchSize: 4, width: 256, layers: 4, heads: 4, mlpWidth: 1024, embeddingSize: 32}, 1))
      const cacheDir = join(dir, 'cache')
      await mkdir(cacheDir)
      const script = join(dir, `open${SCRIPT_EXT}`)
      const session = moduleFor(join(import.meta.dirname, '..', '..', '..', 'src', 'lib', 'model', 'session.ts'))
      await writeFile(
        script,
        `import {openSession} from ${JSON.stringify(pathToFileURL(session).href)}
const s = await openSession(${JSON.stringify(model)}, {threads: 1, keepArena: true, cacheDir: ${JSON.stringify(cacheDir)}})
process.stdout.write(s.inputNames.join())
await s.release()
`,
      )
      // A 64 KiB disk of its own (a mount namespace), too small for the model's 3 MB of weights.
      const r = spawnSync('unshare', ['-rm', 'sh', '-c', `mount -t tmpfs -o size=64k tmpfs "$0" && exec "$@"`, cacheDir, process.execPath, ...nodeArgs(script)], {encoding: 'utf8', timeout: 60_000})
      assert.equal([r.status, r.stdout, r.stderr], [0, 'pixel_values', ''])
    } finally {
      await rm(dir, {recursive: true, force: true})
    }
  },
)

test('a model onnxruntime cannot load is invalid_config with a cache folder too', async () => {
  await withCache(async (model, cacheDir) => {
    await writeFile(model, 'not a model')
    const e = await openSession(model, {threads: 1, keepArena: true, cacheDir}).catch((x: unknown) => x)
    assert.ok(isModError(e) && e.code === 'invalid_config', String(e))
  })
})

test.run()

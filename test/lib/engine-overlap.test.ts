import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import type {Scheduler} from '../../src/lib/pipeline/scheduler.js'
import {createGate} from '../../src/server/queue.js'
import {writeClipFolder} from '../../scripts/onnx/clip-folder.js'
import {buildTextModel} from '../../scripts/onnx/text-transformer.js'
import {buildVisionModel} from '../../scripts/onnx/vit.js'
import {ROOT, solidPng, tempDir} from '../helpers/cli.js'
import {TINY_TEXT} from '../helpers/tiny-clip.js'
import {testSettings, toyEngine} from '../server/harness.js'

const dir = tempDir('mod-engine-overlap-')

test.after(() => dir.remove())

/** A CLIP whose image encoder takes tens of ms on a 64 x 64 input (256 tokens, 8 layers of width 256). */
const SLOW_VISION = {imageSize: 64, patchSize: 4, width: 256, layers: 8, heads: 4, mlpWidth: 1024, embeddingSize: TINY_TEXT.embeddingSize}

let slowClip: Promise<string> | undefined

/** The slow CLIP's folder, written once for the file. */
function slowClipDir(): Promise<string> {
  slowClip ??= (async () => {
    const modelDir = join(dir.path, 'slow-clip')
    await writeClipFolder(modelDir, {
      id: 'slow-clip',
      embeddingSize: TINY_TEXT.embeddingSize,
      contextLength: TINY_TEXT.contextLength,
      imageSize: SLOW_VISION.imageSize,
      patchSize: SLOW_VISION.patchSize,
      visionModel: buildVisionModel(SLOW_VISION, 1),
      textModel: buildTextModel(TINY_TEXT, 2),
      tokenizerDir: join(ROOT, 'models', 'clip-tokenizer'),
    })
    return modelDir
  })()
  return slowClip
}

/** An engine on the slow CLIP that records the size of every inference run. */
async function slowEngine(runs: number[] = []) {
  return toyEngine(testSettings(join(dir.path, 'cache')), await slowClipDir(), {observer: {batch: (size) => runs.push(size)}})
}

/** The server's queue (one preparing at a time, in turn; inference is the engine's), each stage traced in `events`. */
function tracedGate(events: string[]) {
  const gate = createGate(10)
  return (name: string): Scheduler => {
    const inner = gate.admit().scheduler()
    return {
      prepare: async (work, placed) => {
        const out = await inner.prepare(work, placed)
        events.push(`prepared ${name}`)
        return out
      },
      infer: async (work) => {
        events.push(`inferring ${name}`)
        const out = await inner.infer(work)
        events.push(`inferred ${name}`)
        return out
      },
    }
  }
}

test("a server's next image is decoded and preprocessed while the model infers the one before", async () => {
  const engine = await slowEngine()
  try {
    const png = await solidPng(200, 30, 30)
    await engine.moderateImage(png, 'warm.png')
    // Up to three tries: a busy machine may take longer to decode b than the model takes for a (tens of ms), but
    // with inference on the main thread b's decoding would wait for a's inference to end every time.
    const tries: string[] = []
    for (let attempt = 0; attempt < 3; attempt++) {
      const events: string[] = []
      const traced = tracedGate(events)
      const a = engine.moderateImage(png, 'a.png', {scheduler: traced('a')})
      // b comes once a's run is under way (a run about to start would wait for it).
      await until(() => events.includes('inferring a'))
      await new Promise((resolve) => setTimeout(resolve, 5))
      const b = engine.moderateImage(png, 'b.png', {scheduler: traced('b')})
      const results = await Promise.all([a, b])
      assert.equal(results.map((r) => r.source), ['a.png', 'b.png'])
      tries.push(events.join(', '))
      if (events.indexOf('prepared b') < events.indexOf('inferred a')) break
    }
    assert.ok(tries.length < 3 || /prepared b.*inferred a/.test(tries[2]), tries.join(' | '))
  } finally {
    await engine.close()
  }
})

test("the images holding a place in a server's preparing stage run in one batch: a run about to start waits for those still being prepared", async () => {
  const runs: number[] = []
  const engine = await slowEngine(runs)
  try {
    const png = await solidPng(64, 200, 30)
    await engine.moderateImage(png, 'warm.png')
    const traced = tracedGate([])
    // Without waiting, a (prepared first) runs alone while b and c are prepared: runs of 1 and 2, every time. A
    // machine busy enough to take over 30 ms preparing b can give that too, so the three are sent up to 3 times.
    let sizes: number[] = []
    for (let attempt = 0; attempt < 3 && sizes.length !== 1; attempt++) {
      runs.length = 0
      const results = await Promise.all(['a', 'b', 'c'].map((name) => engine.moderateImage(png, `${name}.png`, {scheduler: traced(name)})))
      assert.equal(results.map((r) => r.source), ['a.png', 'b.png', 'c.png'])
      sizes = [...runs]
    }
    assert.equal(sizes, [3])
    // A lone image afterwards: nothing is on its way, its run starts at once.
    runs.length = 0
    await engine.moderateImage(png, 'd.png', {scheduler: traced('d')})
    assert.equal(runs, [1])
  } finally {
    await engine.close()
  }
})

async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((resolve) => setTimeout(resolve, 1))
}

test.run()

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

test("a server's next image is decoded and preprocessed while the model infers the one before", async () => {
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
  const engine = toyEngine(testSettings(join(dir.path, 'cache')), modelDir)
  try {
    await engine.load()
    const png = await solidPng(200, 30, 30)
    await engine.moderateImage(png, 'warm.png')
    // The server's queue: one preparing at a time, in turn, while inference is the engine's.
    const gate = createGate(10)
    const events: string[] = []
    const traced = (name: string): Scheduler => {
      const inner = gate.admit().scheduler()
      return {
        prepare: async (work) => {
          const out = await inner.prepare(work)
          events.push(`prepared ${name}`)
          return out
        },
        infer: async (work) => {
          const out = await inner.infer(work)
          events.push(`inferred ${name}`)
          return out
        },
      }
    }
    const results = await Promise.all(['a', 'b'].map((name) => engine.moderateImage(png, `${name}.png`, {scheduler: traced(name)})))
    assert.equal(results.map((r) => r.source), ['a.png', 'b.png'])
    // With inference on the main thread, b's decoding would wait for a's inference to end.
    assert.equal(events.slice(0, 3), ['prepared a', 'prepared b', 'inferred a'])
  } finally {
    await engine.close()
  }
})

test.run()

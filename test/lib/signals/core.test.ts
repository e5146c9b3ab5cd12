// The inference core with test-only signals: the signals prepare a frame at the same time, and a step record
// gets each signal's preprocessing and inference apart, an inference run shared by two callers in full for each.
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {buildPolicy} from '../../../src/lib/config/policy.js'
import {DEFAULT_LIMITS} from '../../../src/lib/config/settings.js'
import type {StepTimes} from '../../../src/lib/pipeline/steps.js'
import {activeSignals, openCore} from '../../../src/lib/signals/core.js'
import {toImageBox, type FrameOrigin, type Signal} from '../../../src/lib/signals/signal.js'
import type {RgbImage} from '../../../src/lib/types.js'
import {tempDir} from '../../helpers/cli.js'
import {warmCacheDir} from '../../helpers/warm-cache.js'

const dir = tempDir()
test.after(() => dir.remove())

/** A signal feeding `redness` whose preparing notes when it starts and ends in `events`, and takes a turn of the event loop when `slow`. */
function noting(name: string, events: string[], slow: boolean): Signal {
  return {
    name,
    title: name,
    description: 'a test signal',
    kind: 'model',
    combine: {mode: 'mean'},
    off: () => undefined,
    weight: (category) => (category.name === 'redness' ? 1 : 0),
    open: async () => ({
      async prepare(frame: RgbImage) {
        events.push(`${name} starts`)
        if (slow) await new Promise((resolve) => setImmediate(resolve))
        events.push(`${name} ends`)
        return frame.data[0] / 255
      },
      infer: async (values: number[]) => values.map((v) => Float32Array.of(v)),
      scores: (out: Float32Array) => new Map([['redness', out[0]]]),
      dispose: async () => {},
    }),
  }
}

const frame: RgbImage = {data: Buffer.from([255, 0, 0, 255, 0, 0]), width: 2, height: 1}
const policy = buildPolicy({categories: [{name: 'redness', prompts: ['red']}]})
const setup = {modelDir: join(dir.path, 'none'), cacheDir: warmCacheDir(join(dir.path, 'cache')), precision: 'fp32' as const, policy, limits: DEFAULT_LIMITS}

test('the signals prepare a frame at once: the second starts while the first (waiting, as on a libvips resize) has not ended', async () => {
  const events: string[] = []
  const registry = [noting('first', events, true), noting('second', events, false)]
  const core = await openCore(registry, setup, activeSignals(registry, setup), {batchSize: 8})
  try {
    const [prepared] = await core.prepare([frame])
    assert.equal(events, ['first starts', 'second starts', 'second ends', 'first ends'])
    assert.equal([...prepared.entries()], [['first', 1], ['second', 1]])
  } finally {
    await core.dispose()
  }
})

test('a box found in the trimmed frame of an image decoded scaled down maps to the file\'s pixels', async () => {
  // 40x40, a white 8-pixel band on the left (trimmed), decoded at half the file's size (scale 2).
  const data = Buffer.alloc(40 * 40 * 3)
  for (let i = 0; i < 40 * 40; i++) data.set(i % 40 < 8 ? [255, 255, 255] : [(i * 7) % 256, (i * 13) % 256, 90], 3 * i)
  const origins: FrameOrigin[] = []
  const signal: Signal = {
    ...noting('boxes', [], false),
    open: async () => ({
      prepare: (_frame: RgbImage, origin: FrameOrigin) => origins.push(origin),
      infer: async (values: number[]) => values.map(() => Float32Array.of(0)),
      scores: () => new Map([['redness', 0]]),
      dispose: async () => {},
    }),
  }
  const core = await openCore([signal], setup, activeSignals([signal], setup), {batchSize: 8})
  try {
    await core.prepare([{data, width: 40, height: 40, scale: 2}])
    assert.equal(origins, [{left: 8, top: 0, scale: 2}])
    assert.equal(toImageBox([1, 2, 10, 5], origins[0]), [18, 4, 20, 10])
    assert.equal(toImageBox([1, 2, 10, 5], {left: 8, top: 0}), [9, 2, 10, 5])
  } finally {
    await core.dispose()
  }
})

test('a step record gets trimming, each signal\'s preprocessing and inference apart; a run shared by two callers counts in full for each', async () => {
  const registry = [noting('first', [], true), noting('second', [], false)]
  const core = await openCore(registry, setup, activeSignals(registry, setup), {batchSize: 8})
  try {
    const one: StepTimes = {}
    const two: StepTimes = {}
    const [a, b] = await Promise.all([core.prepare([frame], 'image', one), core.prepare([frame], 'image', two)])
    assert.equal(Object.keys(one), ['trim', 'first_preprocess', 'second_preprocess'])
    await Promise.all([core.infer(a, one), core.infer(b, two)])
    assert.equal(Object.keys(one), ['trim', 'first_preprocess', 'second_preprocess', 'first_infer', 'second_infer'])
    assert.is(one.first_infer, two.first_infer)
    assert.is(one.second_infer, two.second_infer)
    assert.is(core.framesInferred(), 2)

    const none = await core.infer(await core.prepare([frame]))
    assert.equal(none.map((o) => core.score(o).map((l) => [l.name, l.score])), [[['redness', 1]]])
  } finally {
    await core.dispose()
  }
})

test('frameSide: the largest side the preparing signals resample to; none when one of them reads every pixel', async () => {
  const sized = (name: string, frameSide?: number, prepares = true): Signal => ({
    ...noting(name, [], false),
    open: async () => ({
      ...(frameSide === undefined ? {} : {frameSide}),
      ...(prepares ? {prepare: () => 0} : {}),
      infer: async (values: number[]) => values.map(() => Float32Array.of(0)),
      scores: () => new Map([['redness', 0]]),
      dispose: async () => {},
    }),
  })
  const sideOf = async (registry: Signal[]) => {
    const core = await openCore(registry, setup, activeSignals(registry, setup), {batchSize: 8})
    try {
      return {side: core.frameSide, key: core.key}
    } finally {
      await core.dispose()
    }
  }
  assert.is((await sideOf([sized('clip', 224), sized('detector', 320)])).side, 320)
  // A signal that prepares nothing (a head reading another's output) does not count.
  assert.is((await sideOf([sized('clip', 224), sized('head', undefined, false)])).side, 224)
  assert.is((await sideOf([sized('clip', 224), sized('hash')])).side, undefined)
  // Features of a reduced decode are cached apart from those of every pixel.
  assert.match((await sideOf([sized('clip', 224)])).key, /-reduced224/)
  assert.not.match((await sideOf([sized('clip', 224), sized('hash')])).key, /reduced/)
})

test("mix: a label's score is rest + share x the calibrated score of the signal that gives raw margins, as score combines them", async () => {
  // The first signal gives raw margins (as CLIP does) and scores 1 on the red frame; the second feeds redness with
  // weight 3 and scores 0.75 (as the NSFW specialist feeds nudity).
  const margins: Signal = {
    ...noting('margins', [], false),
    open: async () => ({
      prepare: (f: RgbImage) => f.data[0] / 255,
      infer: async (values: number[]) => values.map((v) => Float32Array.of(v)),
      scores: (out: Float32Array) => new Map([['redness', out[0]]]),
      raw: (out: Float32Array) => new Map([['redness', 10 * out[0]]]),
      dispose: async () => {},
    }),
  }
  const specialist: Signal = {
    ...noting('specialist', [], false),
    weight: (category) => (category.name === 'redness' ? 3 : 0),
    open: async () => ({
      prepare: () => 0,
      infer: async (values: number[]) => values.map(() => Float32Array.of(0.75)),
      scores: (out: Float32Array) => new Map([['redness', out[0]]]),
      dispose: async () => {},
    }),
  }
  const registry = [margins, specialist]
  const core = await openCore(registry, setup, activeSignals(registry, setup), {batchSize: 8})
  try {
    const [outputs] = await core.infer(await core.prepare([frame]))
    const [label] = core.score(outputs)
    const {share, rest} = core.mix(outputs)
    assert.equal([share[0], rest[0]], [0.25, 0.5625])
    assert.ok(Math.abs(label.score - (rest[0] + share[0] * 1)) < 1e-12)
    assert.equal([...core.raw(outputs)], [10])
  } finally {
    await core.dispose()
  }
})

test.run()

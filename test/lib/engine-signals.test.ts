// The engine's signals: the toy CLIP model (its meaning is fixed: red images match "red") together with the real
// embedded NSFW specialist, a counting stand-in for the specialist where batching is checked, and the closed state.
import {join} from 'node:path'
import {copyFileSync, mkdirSync} from 'node:fs'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {buildPolicy} from '../../src/lib/config/policy.js'
import {DEFAULT_LIMITS} from '../../src/lib/config/settings.js'
import {createEngine, type EngineOptions} from '../../src/lib/engine.js'
import type {StepTimes} from '../../src/lib/pipeline/steps.js'
import {openNsfwRunner, type NsfwRunner} from '../../src/lib/signals/nsfw/runner.js'
import type {ModerationResult} from '../../src/lib/types.js'
import {solidPng, tempDir, TOY_MODEL} from '../helpers/cli.js'
import {signalStates, standInSpecialist, withNsfw, withoutSpecialist} from '../helpers/signals.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const dir = tempDir()
test.after(() => dir.remove())

const NSFW_FED = ['nudity', 'sexual_activity', 'suggestive']

function options(over: Partial<EngineOptions> = {}): EngineOptions {
  return {
    preset: 'fast',
    modelDir: TOY_MODEL,
    cacheDir: warmCacheDir(join(dir.path, 'cache')),
    policy: buildPolicy({categories: [{name: 'redness', prompts: ['red']}]}),
    limits: DEFAULT_LIMITS,
    ...over,
  }
}

const names = (r: ModerationResult) => r.labels.map((l) => l.name).sort()
const scoreOf = (r: ModerationResult, name: string) => r.labels.find((l) => l.name === name)?.score

/** A specialist whose two models answer fixed probabilities for every view, and its runs. */
const countingSpecialist = (probabilities: number[]) => standInSpecialist(() => probabilities)

test('with CLIP and the specialist both loaded, every category is scored and the specialist joins its three by weight', async () => {
  const both = createEngine(options())
  const clipOnly = createEngine(options({signals: withoutSpecialist()}))
  try {
    const red = await solidPng(255, 0, 0)
    const a = await both.moderateImage(red, 'red.png')
    const b = await clipOnly.moderateImage(red, 'red.png')
    assert.equal(a.not_evaluated, [])
    assert.equal(names(a), names(b))
    assert.is(scoreOf(a, 'redness'), scoreOf(b, 'redness'))
    assert.is(scoreOf(a, 'violence'), scoreOf(b, 'violence'))
    // On the toy model every built-in prompt is the zero vector (0.0474); the specialist's weight moves its three.
    assert.is(scoreOf(b, 'nudity'), 0.0474)
    assert.is.not(scoreOf(a, 'nudity'), 0.0474)
    assert.equal(both.signals(), signalStates({clip: 'loaded', nsfw: 'loaded', nudenet: 'not_installed'}))
    const listing = await both.categories()
    assert.equal(listing.categories.find((c) => c.name === 'nudity')?.signals, ['clip', 'nsfw'])
    assert.equal(listing.categories.find((c) => c.name === 'redness')?.signals, ['clip'])
  } finally {
    await both.close()
    await clipOnly.close()
  }
})

test('the score of a category fed by both signals is their weighted mean (clip 1, nsfw 3 for nudity)', async () => {
  // Porn 0.9: the rule gives nudity 0.9; the toy CLIP gives the zero-prompt score 0.0474 (sigmoid(-3)).
  const fixed = countingSpecialist([0.05, 0, 0.05, 0.9, 0])
  const e = createEngine(options({signals: withNsfw(async () => fixed.runner)}))
  try {
    const r = await e.moderateImage(await solidPng(0, 0, 255), 'blue.png')
    const clip = 1 / (1 + Math.exp(3))
    assert.is(scoreOf(r, 'nudity'), Math.round(((clip + 3 * 0.9) / 4) * 10_000) / 10_000)
    assert.equal(r.violations.map((v) => v.name), ['nudity', 'sexual_activity'])
  } finally {
    await e.close()
  }
})

test('policy specialists: {nsfw: false} switches the specialist off: CLIP alone scores, and listings say so', async () => {
  const e = createEngine(options({policy: buildPolicy({specialists: {nsfw: false}, categories: []})}))
  try {
    const r = await e.moderateImage(await solidPng(255, 0, 0), 'red.png')
    assert.is(scoreOf(r, 'nudity'), 0.0474)
    assert.equal(e.signals(), signalStates({clip: 'loaded'}))
    assert.equal((await e.categories()).categories.find((c) => c.name === 'nudity')?.signals, ['clip'])
  } finally {
    await e.close()
  }
})

test('without a CLIP model the specialist alone scores its categories and the others are not evaluated', async () => {
  const e = createEngine(options({modelDir: join(dir.path, 'not-pulled')}))
  try {
    const r = await e.moderateImage(await solidPng(255, 0, 0), 'red.png')
    assert.equal(names(r), [...NSFW_FED].sort())
    assert.equal(r.not_evaluated, ['violence', 'gore', 'weapons', 'hate_symbols', 'drugs', 'self_harm', 'alcohol', 'tobacco', 'redness'])
    assert.equal(await e.notEvaluated(), r.not_evaluated)
    assert.equal(e.signals(), signalStates({clip: 'not_installed', nsfw: 'loaded', nudenet: 'not_installed'}))
  } finally {
    await e.close()
  }
})

test('a folder the user named must hold a model: requireClip turns a missing CLIP model into model_missing', async () => {
  const e = createEngine(options({modelDir: join(dir.path, 'not-pulled'), requireClip: true}))
  const code = await e.load().then(() => 'loaded', (err: {code: string}) => err.code)
  assert.is(code, 'model_missing')
  await e.close()
})

test('only nsfw narrows the policy to the specialist\'s categories and loads no CLIP model', async () => {
  const e = createEngine(options({only: 'nsfw'}))
  try {
    const r = await e.moderateImage(await solidPng(255, 0, 0), 'red.png')
    assert.equal(names(r), [...NSFW_FED].sort())
    assert.equal(r.not_evaluated, [])
    assert.equal(e.signals(), signalStates({nsfw: 'loaded', nudenet: 'not_installed'}))
  } finally {
    await e.close()
  }
})

test('concurrent images are inferred together: one specialist run for several callers', async () => {
  // Porn 0.9: every frame passes the gate, and the judge then looks at each one's three views (a run a frame, so
  // that its memory does not grow with the batch); so sure a gate looks at no quarter turn.
  const fixed = countingSpecialist([0.05, 0, 0.05, 0.9, 0])
  const e = createEngine(options({only: 'nsfw', signals: withNsfw(async () => fixed.runner)}))
  try {
    await e.load()
    const image = await solidPng(0, 255, 0)
    // Decoding ends at times the test cannot control, so a barrier holds each caller before inference until all
    // six are decoded: they then reach the batcher in one turn, as callers do whenever the runner is busy.
    let arrived = 0
    let release = () => {}
    const allDecoded = new Promise<void>((resolve) => (release = resolve))
    const scheduler = {
      prepare: <T>(work: () => Promise<T>) => work(),
      infer: async <T>(work: () => Promise<T>) => {
        if (++arrived === 6) release()
        await allDecoded
        return work()
      },
    }
    const results = await Promise.all(Array.from({length: 6}, (_, i) => e.moderateImage(image, `${i}.png`, {scheduler})))
    assert.equal(fixed.runs, ['gate 6', ...Array(6).fill('judge 3')])
    assert.equal(results.map((r) => r.source), ['0.png', '1.png', '2.png', '3.png', '4.png', '5.png'])
  } finally {
    await e.close()
  }
})

test('the judge opens on first need: a scan of frames the gate stops never opens it; an eager engine (a server) opens it at load', async () => {
  // The shipped specialist without its judge's file: opening the judge fails, so whether it opened is plain.
  const noJudge = join(dir.path, 'nsfw-no-judge')
  mkdirSync(noJudge)
  for (const f of ['manifest.json', 'nsfw-mobilenet-v2.onnx']) copyFileSync(join('models', 'nsfw', f), join(noJudge, f))
  const signals = withNsfw((setup) => openNsfwRunner({threads: setup.threads, cacheDir: setup.cacheDir, dir: noJudge}))
  const lazy = createEngine(options({modelDir: join(dir.path, 'not-pulled'), signals}))
  try {
    await lazy.load()
    const r = await lazy.moderateImage(await solidPng(0, 0, 255), 'blue.png')
    assert.equal(names(r), [...NSFW_FED].sort())
  } finally {
    await lazy.close()
  }
  const eager = createEngine(options({modelDir: join(dir.path, 'not-pulled'), signals, eager: true}))
  try {
    await eager.load().then(
      () => assert.unreachable('an eager engine opens the judge at load'),
      (e: Error) => assert.match(e.message, /nsfw-inception-v3\.onnx/),
    )
  } finally {
    await eager.close()
  }
})

test('the judge looks only at frames the gate lets through', async () => {
  const stopped = countingSpecialist([0.95, 0, 0.05, 0, 0])
  const passed = countingSpecialist([0.2, 0, 0.2, 0.6, 0])
  for (const [specialist, runs] of [
    [stopped, ['gate 1']],
    [passed, ['gate 1', 'gate 3', 'judge 3']],
  ] as const) {
    const e = createEngine(options({only: 'nsfw', signals: withNsfw(async () => specialist.runner)}))
    try {
      await e.moderateImage(await solidPng(0, 255, 0), 'g.png')
      assert.equal(specialist.runs, runs)
    } finally {
      await e.close()
    }
  }
})

test('with the specialist alone, the judge\'s image and letterbox both Porn + Hentai >= 0.9 is nudity, whatever the centre says', async () => {
  const neutral = [0, 0, 1, 0, 0]
  for (const [letterbox, nudity] of [
    [[0, 0.4, 0.1, 0.5, 0], 0.9],
    [[0, 0.35, 0.15, 0.5, 0], 0],
  ] as const) {
    // The gate (view 0) lets it through; the judge's image (1) is sure, its centre (2) neutral.
    const answers = [[0, 0, 0.7, 0.3, 0], [0, 0.3, 0.05, 0.65, 0], neutral, [...letterbox]]
    const e = createEngine(options({only: 'nsfw', signals: withNsfw(async () => standInSpecialist((v) => answers[v]).runner)}))
    try {
      const r = await e.moderateImage(await solidPng(0, 255, 0), 'g.png')
      assert.is(scoreOf(r, 'nudity'), nudity)
      assert.equal(r.violations.map((v) => v.name), nudity ? ['nudity'] : [])
    } finally {
      await e.close()
    }
  }
})

test('after close every call is refused, and a close during the load releases what the load opened', async () => {
  let closedRunners = 0
  let openRunner: (() => void) | undefined
  const e = createEngine(
    options({
      only: 'nsfw',
      signals: withNsfw(
        () =>
          new Promise<NsfwRunner>((resolve) => {
            openRunner = () => resolve({...countingSpecialist([1, 0, 0, 0, 0]).runner, close: async () => void closedRunners++})
          }),
      ),
    }),
  )
  const loading = e.load().then(() => 'loaded', (err: {code: string; message: string}) => `${err.code}: ${err.message}`)
  while (openRunner === undefined) await new Promise((resolve) => setImmediate(resolve))
  const closing = e.close()
  openRunner()
  await closing
  assert.is(await loading, 'model_unavailable: the engine is closed')
  assert.is(closedRunners, 1)
  assert.is(e.isLoaded(), false)
  const refused = await e.moderateImage(await solidPng(0, 0, 255), 'b.png').then(() => 'ran', (err: {code: string}) => err.code)
  assert.is(refused, 'model_unavailable')
  assert.is(await e.categories().then(() => 'ran', (err: {code: string}) => err.code), 'model_unavailable')
})

test('asked for a record of its steps, the engine times each step of the default path, each signal apart (summed over the images of a batch)', async () => {
  const engine = createEngine(options())
  const steps = ['decode', 'trim', 'clip_preprocess', 'nsfw_preprocess', 'wait', 'clip_infer', 'nsfw_infer', 'score']
  try {
    const red = await solidPng(255, 0, 0)
    const one: StepTimes = {}
    const plain = await engine.moderateImage(red, 'red.png')
    const timed = await engine.moderateImage(red, 'red.png', {steps: one})
    assert.equal(timed, plain)
    assert.equal(Object.keys(one).sort(), [...steps].sort())
    for (const step of steps) assert.ok(one[step] >= 0, step)

    const many: StepTimes = {}
    const inputs = [red, red, Buffer.from('not an image')].map((data, i) => ({source: `${i}`, read: async () => data}))
    const results = []
    for await (const r of engine.moderateMany(inputs, {steps: many})) results.push(r)
    assert.equal(results.map((r) => 'error' in r), [false, false, true])
    assert.equal(Object.keys(many).sort(), [...steps].sort())
  } finally {
    await engine.close()
  }
})

test('with the specialist switched off, only the steps of CLIP are recorded', async () => {
  const engine = createEngine(options({policy: buildPolicy({categories: [{name: 'redness', prompts: ['red']}], specialists: {nsfw: false}})}))
  try {
    const steps: StepTimes = {}
    await engine.moderateImage(await solidPng(255, 0, 0), 'red.png', {steps})
    assert.equal(Object.keys(steps).sort(), ['clip_infer', 'clip_preprocess', 'decode', 'score', 'trim', 'wait'])
  } finally {
    await engine.close()
  }
})

test.run()

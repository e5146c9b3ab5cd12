// A signal plugs in with one folder and one registry line: here a test-only signal (the share of red in a
// frame, feeding `redness`) is added to the registry's list and shows up wherever signals are listed or used.
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {buildPolicy} from '../../../src/lib/config/policy.js'
import {DEFAULT_LIMITS} from '../../../src/lib/config/settings.js'
import {createEngine} from '../../../src/lib/engine.js'
import {openDatasetScoring} from '../../../src/lib/eval/features.js'
import {activeSignals, openCore} from '../../../src/lib/signals/core.js'
import {imageEvidence, openEvidence} from '../../../src/lib/signals/evidence.js'
import type {Signal} from '../../../src/lib/signals/signal.js'
import {solidPng, tempDir} from '../../helpers/cli.js'
import {start, testSettings} from '../../server/harness.js'
import {signalStates, withoutSpecialist} from '../../helpers/signals.js'

const dir = tempDir()
test.after(() => dir.remove())

/** The share of the frame's brightness that is red: 1 for pure red, 0 for pure blue. */
const redMeter: Signal = {
  name: 'red_meter',
  title: 'the red meter',
  description: 'the share of red (a test signal)',
  kind: 'model',
  combine: {mode: 'mean'},
  off: () => undefined,
  weight: (category) => (category.name === 'redness' ? 1 : 0),
  open: async () => ({
    key: 'red-meter',
    prepare(frame) {
      let red = 0
      let all = 0
      for (let i = 0; i < frame.data.length; i += 3) {
        red += frame.data[i]
        all += frame.data[i] + frame.data[i + 1] + frame.data[i + 2]
      }
      return all === 0 ? 0 : red / all
    },
    infer: async (shares: number[]) => shares.map((s) => Float32Array.of(s)),
    scores: (out: Float32Array) => new Map([['redness', out[0]]]),
    encode: (out: Float32Array) => out,
    decode: (features: Float32Array) => features,
    dispose: async () => {},
  }),
}

const registry = [...withoutSpecialist(), redMeter]
const policy = buildPolicy({categories: [{name: 'redness', prompts: ['red']}]})
const cacheDir = join(dir.path, 'cache')
// No CLIP model pulled and no specialist: the test signal alone scores.
const setup = {preset: 'fast' as const, modelDir: join(dir.path, 'not-pulled'), cacheDir, policy, limits: DEFAULT_LIMITS, signals: registry}

// The result schemas, and so the server's checks of its answers, are built from the registry's own signals, which
// this test extends: its servers send their answers unchecked.
const unchecked = {tmpDir: dir.path, checkAnswers: false}

test('a registered signal scores scan results, and /health and /v1/categories list it', async () => {
  const engine = createEngine(setup)
  const server = await start(engine, testSettings(cacheDir), unchecked)
  try {
    const red = await engine.moderateImage(await solidPng(255, 0, 0), 'red.png')
    assert.equal(red.labels.map((l) => [l.name, l.score, l.violated]), [['redness', 1, true]])
    assert.ok(red.not_evaluated.includes('violence') && !red.not_evaluated.includes('redness'))
    const blue = await engine.moderateImage(await solidPng(0, 0, 255), 'blue.png')
    assert.equal(blue.labels.map((l) => [l.name, l.score]), [['redness', 0]])
    // Plain requests: the OpenAPI document describes the registry's own signals, which this test extends.
    const get = async (path: string) => (await fetch(`${server.base}${path}`)).json()
    assert.equal((await get('/health')).signals, signalStates({clip: 'not_installed', red_meter: 'loaded'}))
    const listing = await get('/v1/categories')
    const redness = listing.categories.find((c: {name: string}) => c.name === 'redness')
    assert.equal(redness.signals, ['clip', 'red_meter'])
    assert.equal([redness.evaluated, redness.evaluated_by], [true, ['red_meter']])
    assert.equal(listing.coverage, (await get('/ready')).coverage)
  } finally {
    await server.stop()
    await engine.close()
  }
})

const PULL = 'needs the CLIP model: not installed, run `mod models pull fast`'
const notEvaluated = [
  'nudity',
  'sexual_activity',
  'suggestive',
  'violence',
  'gore',
  'weapons',
  'hate_symbols',
  'drugs',
  'self_harm',
  'alcohol',
  'tobacco',
]

test('each category says whether it is evaluated, by what, or why not and what adds it; /ready stays ready and says so', async () => {
  const engine = createEngine(setup)
  const server = await start(engine, testSettings(cacheDir), unchecked)
  try {
    const get = async (path: string) => (await fetch(`${server.base}${path}`)).json()
    // Before the load: read from what is installed, without loading a model.
    const before = await get('/health')
    assert.is(before.model_loaded, false)
    await engine.load()
    const health = await get('/health')
    assert.equal(before.categories, health.categories)
    assert.equal(health.coverage, {evaluated: 1, total: 12, not_evaluated: notEvaluated})
    const state = (name: string) => health.categories.find((c: {name: string}) => c.name === name)
    assert.equal(state('redness'), {name: 'redness', evaluated: true, evaluated_by: ['red_meter']})
    assert.equal(state('weapons'), {name: 'weapons', evaluated: false, evaluated_by: [], reason: PULL})
    assert.equal(state('nudity'), {
      name: 'nudity',
      evaluated: false,
      evaluated_by: [],
      reason: `${PULL}; needs the NSFW specialist: none is installed with this setup`,
    })
    const ready = await fetch(`${server.base}/ready`)
    assert.equal([ready.status, await ready.json()], [200, {status: 'ready', coverage: health.coverage}])
    const weapons = (await get('/v1/categories')).categories.find((c: {name: string}) => c.name === 'weapons')
    assert.equal([weapons.signals, weapons.evaluated, weapons.evaluated_by, weapons.reason], [['clip'], false, [], PULL])
  } finally {
    await server.stop()
    await engine.close()
  }
})

test('eval scores with a registered signal as scan does, and keeps its output as a feature', async () => {
  const scoring = await openDatasetScoring({modelDir: setup.modelDir, precision: 'fp32', cacheDir, limits: DEFAULT_LIMITS}, {policy, signals: registry})
  try {
    assert.is(scoring.key, 'red-meter')
    assert.equal(scoring.labels.map((l) => l.name), ['redness'])
    const features = await scoring.extract(await solidPng(255, 0, 0))
    assert.equal(Object.keys(features.signals), ['red_meter'])
    assert.equal([...scoring.score(features)], [1])
  } finally {
    await scoring.dispose()
  }
})

test('a signal can run only when the policy asks for it (policySwitch off), and carry evidence beyond label scores', async () => {
  const boxed: Signal = {
    ...redMeter,
    name: 'red_boxes',
    policySwitch: 'off',
    // Its own kind of evidence: a box per frame, reported as the result's `boxes`.
    evidence: {imageFields: {}, image: (frames) => ({boxes: frames.flat()})},
    open: async (o, opened) => ({
      ...(await redMeter.open(o, opened)),
      evidence: (out: Float32Array) => [{label: 'redness', score: out[0], box: [0, 0, 64, 64]}],
    }),
  }
  const withBoxes = [...withoutSpecialist(), boxed]
  const quiet = createEngine({...setup, signals: withBoxes})
  assert.equal(quiet.signals().red_boxes, 'off')
  await quiet.close()

  const asked = {...policy, specialists: {...policy.specialists, red_boxes: true}}
  const engine = createEngine({...setup, policy: asked, signals: withBoxes})
  try {
    const red = await engine.moderateImage(await solidPng(255, 0, 0), 'red.png')
    assert.equal(red.labels.map((l) => [l.name, l.score]), [['redness', 1]])
    assert.equal(engine.signals().red_boxes, 'loaded')
  } finally {
    await engine.close()
  }

  const o = {...setup, precision: 'fp32' as const, policy: asked}
  const core = await openCore(withBoxes, o, activeSignals(withBoxes, o), {batchSize: 8})
  try {
    const [outputs] = await core.infer(await core.prepare([{data: Buffer.from([255, 0, 0, 255, 0, 0]), width: 2, height: 1}]))
    const found = [{label: 'redness', score: 1, box: [0, 0, 64, 64]}]
    assert.equal([...core.evidence(outputs)], [['red_boxes', found]])
    assert.equal(imageEvidence(openEvidence(withBoxes, core.open), [core.evidence(outputs)]), {boxes: found})
  } finally {
    await core.dispose()
  }
})

test.run()

// How signals combine is declared on each (combine, needs) and checked when a registry is built: the order they
// open and combine in comes from the declarations, so reordering the registry's list changes no result, and
// declarations that contradict each other are refused.
import {mkdirSync, readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {loadPolicyFile} from '../../../src/lib/config/policy.js'
import {DEFAULT_LIMITS} from '../../../src/lib/config/settings.js'
import {createEngine} from '../../../src/lib/engine.js'
import {isModError} from '../../../src/lib/errors.js'
import {checkOpened, runOrder, type Combining} from '../../../src/lib/signals/combination.js'
import type {Detection} from '../../../src/lib/signals/nudenet/decode.js'
import {hashImage} from '../../../src/lib/signals/pdq/hash-media.js'
import {SIGNALS} from '../../../src/lib/signals/registry.js'
import type {Signal} from '../../../src/lib/signals/signal.js'
import type {ModerationResult} from '../../../src/lib/types.js'
import {ROOT, tempDir, TOY_MODEL} from '../../helpers/cli.js'
import {standInSpecialist, withNsfw, withNudenet} from '../../helpers/signals.js'
import {warmCacheDir} from '../../helpers/warm-cache.js'

const dir = tempDir()
test.after(() => dir.remove())

const names = (signals: readonly {name: string}[]) => signals.map((s) => s.name)

/** Every ordering of `list` (Heap's algorithm). */
function permutations<T>(list: readonly T[]): T[][] {
  const out: T[][] = []
  const a = [...list]
  const c = a.map(() => 0)
  out.push([...a])
  for (let i = 1; i < a.length; ) {
    if (c[i] < i) {
      const j = i % 2 === 0 ? 0 : c[i]
      ;[a[j], a[i]] = [a[i], a[j]]
      out.push([...a])
      c[i]++
      i = 1
    } else c[i++] = 0
  }
  return out
}

test("the registry's run order: scorers, then revisers (the detector before the head), then maxima, each step by name", () => {
  assert.equal(names(runOrder(SIGNALS)), ['clip', 'nsfw', 'nudenet', 'head', 'codes', 'pdq', 'text'])
})

test('every ordering of the registry gives the same run order', () => {
  const orders = permutations(SIGNALS)
  assert.is(orders.length, 5040)
  const want = names(runOrder(SIGNALS))
  for (const order of orders) assert.equal(names(runOrder(order)), want)
})

function refused(signals: Combining[], message: RegExp): void {
  try {
    runOrder(signals)
  } catch (e) {
    assert.ok(isModError(e) && e.code === 'internal', String(e))
    assert.match((e as Error).message, message)
    return
  }
  assert.unreachable(`accepted ${names(signals).join(', ')}`)
}

const mean = (name: string, needs?: string[]): Combining => ({name, kind: 'model', combine: {mode: 'mean'}, ...(needs ? {needs} : {})})
const revise = (name: string, after?: string[], needs?: string[]): Combining => ({name, kind: 'labels', combine: {mode: 'revise', after}, ...(needs ? {needs} : {})})
const max = (name: string): Combining => ({name, kind: 'model', combine: {mode: 'max'}})

test('contradicting declarations are refused, each saying which signals', () => {
  refused([mean('a'), revise('b', ['c']), revise('c', ['b'])], /b, c wait on each other/)
  refused([mean('a'), revise('b', ['b'])], /b revises after itself/)
  refused([mean('a'), revise('b'), max('m'), revise('c', ['m'])], /c revises after m, whose maximum must come after every revision/)
  refused([mean('a'), revise('b', ['nobody'])], /b revises after nobody, which is not a signal/)
  refused([mean('a'), {name: 'h', kind: 'labels', combine: {mode: 'mean'}}], /h builds on the combined labels/)
  // A scorer needing a reviser would open after it but combine before it.
  refused([mean('a', ['b']), revise('b')], /a, b wait on each other/)
  refused([mean('a'), mean('a')], /two signals share a name/)
})

test('what a signal needs opens before it, whatever the list says', () => {
  assert.equal(names(runOrder([revise('r2', [], ['r1']), revise('r1'), max('m'), mean('z'), mean('a')])), ['a', 'z', 'r1', 'r2', 'm'])
})

test('an opened signal must do what it declares: scores for a mean, adjust for a revision or a maximum', () => {
  const labels = (l: never) => l
  assert.throws(() => checkOpened(max('m'), {scores: () => new Map()}), /m gives scores but declares max, not mean/)
  assert.throws(() => checkOpened(mean('a'), {adjust: labels}), /a adjusts the combined labels but declares mean/)
  checkOpened(mean('a'), {scores: () => new Map()})
  checkOpened(revise('r'), {adjust: labels})
})

// The real registry, listed in several orders, on two photos: the toy CLIP model, a specialist that says nudity
// 0.7 (below its sure bar), a detector that finds a face only (so it vetoes nudity), and a hash list that
// counts the astronaut photo as nudity. Where order mattered, the match came after the veto and a listed signal
// came after what it needs; now every order gives these results.
const PHOTOS = join(ROOT, 'test', 'fixtures', 'photos')
const LIKELY = [0.15, 0, 0.15, 0.7, 0]
const face: Detection = {label: 'FACE_MALE', score: 0.8, box: [0, 0, 5, 5]}

function reorderings(list: readonly Signal[]): Signal[][] {
  const rotated = (k: number) => [...list.slice(k), ...list.slice(0, k)]
  return [[...list], [...list].reverse(), rotated(3), rotated(5).reverse()]
}

test('reordering the registry changes no result: the veto, then the hash match, whatever the list order', async () => {
  const astronaut = readFileSync(join(PHOTOS, 'astronaut.jpg'))
  const coffee = readFileSync(join(PHOTOS, 'coffee.jpg'))
  const folder = join(dir.path, 'policy')
  mkdirSync(folder, {recursive: true})
  writeFileSync(join(folder, 'banned.txt'), `${(await hashImage(astronaut, DEFAULT_LIMITS))[0].hash},case-1\n`)
  writeFileSync(join(folder, 'policy.yaml'), 'hash_lists:\n  banned:\n    file: banned.txt\n    category: nudity\n')
  const {policy} = await loadPolicyFile(join(folder, 'policy.yaml'))
  const base = withNudenet(async () => ({
    manifest: {kind: 'detector', id: 'stand-in', licence: 'AGPL-3.0', files: [{path: 'x.onnx', role: 'detector'}]},
    prepare: (f) => ({pixels: new Float32Array(0), width: f.width, height: f.height}),
    detect: async (inputs) => inputs.map(() => [{...face, box: [...face.box] as Detection['box']}]),
    close: async () => {},
  }), undefined, withNsfw(async () => standInSpecialist(() => LIKELY).runner))
  const cacheDir = warmCacheDir(join(dir.path, 'cache'))
  const results: ModerationResult[][] = []
  for (const signals of reorderings(base)) {
    await using engine = createEngine({preset: 'fast', modelDir: TOY_MODEL, cacheDir, policy, limits: DEFAULT_LIMITS, signals})
    results.push([await engine.moderateImage(astronaut, 'astronaut.jpg'), await engine.moderateImage(coffee, 'coffee.jpg')])
  }
  const [listed, other] = results[0]
  assert.equal(listed.violations.find((v) => v.name === 'nudity')?.confidence, 1)
  assert.equal(listed.matches?.map((m) => m.label), ['case-1'])
  // The detector's veto held the unlisted photo's nudity under the specialist's 0.7 and CLIP's mean with it.
  assert.ok((other.labels.find((l) => l.name === 'nudity')?.score ?? 1) < 0.5, JSON.stringify(other.labels))
  assert.equal(other.regions, [])
  for (const r of results.slice(1)) assert.equal(r, results[0])
})

test.run()

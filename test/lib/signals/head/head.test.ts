import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {buildPolicy} from '../../../../src/lib/config/policy.js'
import {isModError, type ModError} from '../../../../src/lib/errors.js'
import {applyHead, checkHeadFits, checkHeadParents, loadHead, parseHead} from '../../../../src/lib/signals/head/head.js'
import {finishLabel, type ScoredLabel} from '../../../../src/lib/scoring/result.js'

const dir = mkdtempSync(join(tmpdir(), 'mod-head-'))
test.after(() => rmSync(dir, {recursive: true, force: true}))

function headJson(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    format: 'mod-head',
    version: 1,
    model_id: 'toy-clip',
    embedding_size: 3,
    activation: 'sigmoid',
    labels: [
      {name: 'fireworks', threshold: 0.6, weights: [1, 0, 0], bias: 0},
      {name: 'weapons', weights: [2, 0, 0], bias: -1, blend: 0.25},
    ],
    ...overrides,
  }
}

function thrown(fn: () => unknown): ModError {
  try {
    fn()
  } catch (e) {
    if (isModError(e)) return e
    throw e
  }
  throw new Error('expected a ModError')
}

test('a valid head file loads with defaults for parent, threshold and blend', async () => {
  const path = join(dir, 'head.json')
  writeFileSync(path, JSON.stringify(headJson()))
  const head = await loadHead(path)
  assert.is(head.model_id, 'toy-clip')
  assert.is(head.embedding_size, 3)
  assert.is(head.activation, 'sigmoid')
  assert.equal(
    head.labels.map((l) => [l.name, l.parent, l.threshold, [...l.weights], l.bias, l.blend]),
    [
      ['fireworks', null, 0.6, [1, 0, 0], 0, 0.5],
      ['weapons', null, 0.5, [2, 0, 0], -1, 0.25],
    ],
  )
})

test('every problem of a head file is reported at once', () => {
  const e = thrown(() =>
    parseHead(
      JSON.stringify(
        headJson({
          format: 'other',
          version: 2,
          extra: true,
          labels: [
            {name: 'a', weights: [1, 0], bias: 0},
            {name: 'b', weights: [1, 0, 0], bias: 0, threshold: 1.5, blend: -1, colour: 'x'},
            {name: 'a', weights: [1, 0, 0], bias: 'high'},
            {name: 'c', weights: [1, 0, 0], bias: 0, parent: 'd'},
            {name: 'd', weights: [1, 0, 0], bias: 0, parent: 'c'},
          ],
        }),
      ),
      'h.json',
    ),
  )
  assert.is(e.code, 'invalid_config')
  assert.is(
    e.message,
    [
      'invalid head file h.json:',
      '  unknown key "extra" (expected one of format, version, model_id, embedding_size, activation, description, labels)',
      '  format must be "mod-head"',
      '  version must be 1 (this mod reads version 1 heads)',
      '  labels[0].weights has 2 numbers, embedding_size is 3',
      '  labels[1]: unknown key "colour" (expected one of name, parent, threshold, weights, bias, blend)',
      '  labels[1].threshold must be a number from 0 to 1',
      '  labels[1].blend must be a number from 0 to 1',
      '  labels[2].bias must be a number',
      '  a cycle of parents: c → d → c',
    ].join('\n'),
  )
})

test('duplicate label names, a missing model id and a bad activation are refused', () => {
  const e = thrown(() =>
    parseHead(
      JSON.stringify(
        headJson({
          model_id: '',
          embedding_size: 2.5,
          activation: 'relu',
          labels: [
            {name: 'x', weights: [1], bias: 0},
            {name: 'x', weights: [1], bias: 0},
          ],
        }),
      ),
      'h.json',
    ),
  )
  assert.match(e.message, 'model_id must be the id of the model the head was trained for')
  assert.match(e.message, 'embedding_size must be a positive integer')
  assert.match(e.message, 'activation must be "sigmoid" or "none"')
  assert.match(e.message, 'labels[1]: the name "x" is used twice')
})

test('a file that is not JSON, or has no labels, is an invalid_config error', () => {
  assert.is(thrown(() => parseHead('{"format": ', 'h.json')).code, 'invalid_config')
  assert.match(thrown(() => parseHead('[]', 'h.json')).message, 'the file must hold a JSON object')
  assert.match(thrown(() => parseHead(JSON.stringify(headJson({labels: []})), 'h.json')).message, 'labels must be a list of at least one label')
})

test('a label named in letters that are not ASCII is refused saying the naming rule', () => {
  const e = thrown(() => parseHead(JSON.stringify(headJson({labels: [{name: '烟花', weights: [1, 0, 0], bias: 0}]})), 'h.json'))
  assert.match(e.message, 'labels[0].name may hold only ASCII letters and digits, "_", "-" and ".", start with a letter or a digit, and be at most 64 long')
})

test('a missing head file is an invalid_config error naming it', async () => {
  try {
    await loadHead(join(dir, 'nope.json'))
    assert.unreachable()
  } catch (e) {
    assert.ok(isModError(e))
    assert.is(e.code, 'invalid_config')
    assert.is(e.message, `cannot read the head file ${join(dir, 'nope.json')}: no such file`)
  }
})

test('a head for the model in use fits', () => {
  checkHeadFits(parseHead(JSON.stringify(headJson()), 'h'), 'toy-clip', 3)
})

test('a head trained for another model is refused, naming both ids', () => {
  const e = thrown(() => checkHeadFits(parseHead(JSON.stringify(headJson()), 'h'), 'clip-vit-base-patch32', 3))
  assert.is(e.code, 'invalid_config')
  assert.is(e.message, 'the head does not fit this model: it was trained for the model "toy-clip", the model in use is "clip-vit-base-patch32"')
})

test('a head for another embedding size is refused, naming both sizes', () => {
  const e = thrown(() => checkHeadFits(parseHead(JSON.stringify(headJson()), 'h'), 'toy-clip', 8))
  assert.is(e.code, 'invalid_config')
  assert.is(e.message, 'the head does not fit this model: it expects embeddings of size 3, the model "toy-clip" gives 8')
})

test('a head-only label\'s parent must be a head label or a policy category', () => {
  const policy = buildPolicy()
  const withParent = (parent: string) =>
    parseHead(JSON.stringify(headJson({labels: [{name: 'x', weights: [1, 0, 0], bias: 0, parent}, {name: 'y', weights: [1, 0, 0], bias: 0}]})), 'h')
  checkHeadParents(withParent('violence'), policy)
  checkHeadParents(withParent('y'), policy)
  const e = thrown(() => checkHeadParents(withParent('nothing'), policy))
  assert.is(e.code, 'invalid_config')
  assert.is(e.message, 'the head does not fit the policy: "x" has the parent "nothing", which is neither a head label nor a category')
})

test('head labels are added with origin head; a shared name blends and keeps the category\'s fields', () => {
  const head = parseHead(JSON.stringify(headJson()), 'h')
  const labels: ScoredLabel[] = [
    {name: 'weapons', score: 0.0474, threshold: 0.3, parent: 'violence', origin: 'builtin'},
    {name: 'violence', score: 0.0474, threshold: 0.5, parent: null, origin: 'builtin'},
  ]
  // The image is normalised first: [2, 0, 0] → [1, 0, 0].
  const out = applyHead(head, Float32Array.from([2, 0, 0]), labels).map(finishLabel)
  assert.equal(out, [
    // 0.75 · 0.0474 + 0.25 · sigmoid(2·1 − 1) = 0.035550 + 0.182765 = 0.2183
    {name: 'weapons', score: 0.2183, threshold: 0.3, parent: 'violence', violated: false, origin: 'builtin'},
    {name: 'violence', score: 0.0474, threshold: 0.5, parent: null, violated: false, origin: 'builtin'},
    // sigmoid(1) = 0.731059
    {name: 'fireworks', score: 0.7311, threshold: 0.6, parent: null, violated: true, origin: 'head'},
  ])
})

test('a linear head is clamped to [0, 1]', () => {
  const head = parseHead(
    JSON.stringify(
      headJson({
        activation: 'none',
        labels: [
          {name: 'low', weights: [0.3, 0, 0], bias: 0},
          {name: 'high', weights: [1, 0, 0], bias: 0.5},
          {name: 'neg', weights: [0, 1, 0], bias: -0.2},
        ],
      }),
    ),
    'h',
  )
  assert.equal(
    applyHead(head, Float32Array.from([1, 0, 0]), []).map(finishLabel).map((l) => [l.name, l.score]),
    [
      ['low', 0.3],
      ['high', 1],
      ['neg', 0],
    ],
  )
})

test('blend 1 replaces the category score with the head score', () => {
  const head = parseHead(JSON.stringify(headJson({labels: [{name: 'a', weights: [0, 0, 0], bias: 0, blend: 1}]})), 'h')
  const out = applyHead(head, Float32Array.from([0, 0, 0]), [{name: 'a', score: 0.9, threshold: 0.5, parent: null, origin: 'custom'}]).map(finishLabel)
  assert.equal(out, [{name: 'a', score: 0.5, threshold: 0.5, parent: null, violated: true, origin: 'custom'}])
})

test('an image embedding of another size is an internal error', () => {
  const head = parseHead(JSON.stringify(headJson()), 'h')
  assert.is(thrown(() => applyHead(head, new Float32Array(4), [])).code, 'internal')
})

test.run()

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {parseHead} from '../../../src/lib/signals/head/head.js'
import {sigmoid} from '../../../src/lib/scoring/calibrate.js'
import {DEFAULT_TRAIN_OPTIONS, headFileJson, trainHead, type EmbeddingSample} from '../../../src/lib/eval/train-head.js'

const hash = (i: number) => i.toString(16).padStart(64, '0')

/** Unit vectors at an angle near `angle` (radians) in the first two dimensions of a 4-dimensional space. */
function around(angle: number, n: number, truth: string[], from: number, spread = 0.2): EmbeddingSample[] {
  return Array.from({length: n}, (_, i) => {
    const a = angle + spread * (i / (n - 1) - 0.5)
    return {sha256: hash(from + i), truth, embedding: Float32Array.from([Math.cos(a), Math.sin(a), 0, 0])}
  })
}

test('a label separable by direction is learned: every held-out image on the right side of 0.5', () => {
  const samples = [...around(0, 40, ['east'], 0), ...around(Math.PI, 40, [], 100), ...around(Math.PI / 2, 20, [], 200)]
  const head = trainHead(samples, ['east'], DEFAULT_TRAIN_OPTIONS)
  const [east] = head.labels
  assert.is(head.train_images + head.heldout_images, 100)
  assert.ok(head.heldout_images > 5 && head.train_images > 60)
  assert.equal([east.heldout.recall, east.heldout.precision, east.heldout.safe_fpr], [1, 1, 0])
  const score = (x: number[]) => sigmoid(x.reduce((z, v, k) => z + v * east.weights[k], east.bias))
  assert.ok(score([1, 0, 0, 0]) > 0.9 && score([-1, 0, 0, 0]) < 0.1)
})

test('early stopping: overlapping classes stop well before maxEpochs', () => {
  // Two labels' directions overlap: held-out loss stops improving.
  const samples = [...around(0, 40, ['a'], 0, 2.5), ...around(0.5, 40, [], 100, 2.5)]
  const head = trainHead(samples, ['a'], {...DEFAULT_TRAIN_OPTIONS, maxEpochs: 5000})
  assert.ok(head.labels[0].epochs < 5000, String(head.labels[0].epochs))
})

test('a label with no training image is refused', () => {
  const samples = around(0, 10, [], 0)
  assert.throws(() => trainHead(samples, ['nothing'], DEFAULT_TRAIN_OPTIONS), /label nothing: the training part has none of its images/)
})

test('the head file is valid for parseHead, with the model id and size', () => {
  const samples = [...around(0, 20, ['east'], 0), ...around(Math.PI, 20, [], 100)]
  const head = trainHead(samples, ['east'], DEFAULT_TRAIN_OPTIONS)
  const text = headFileJson(head, {id: 'toy-clip', embeddingSize: 4}, 'test')
  const parsed = parseHead(text, 'head.json')
  assert.is(parsed.model_id, 'toy-clip')
  assert.is(parsed.embedding_size, 4)
  assert.is(parsed.activation, 'sigmoid')
  assert.equal(parsed.labels.map((l) => [l.name, l.threshold, l.parent]), [['east', 0.5, null]])
  assert.match(text, /"weights": \[[-\d.e, ]+\]/)
})

test.run()

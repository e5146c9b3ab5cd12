import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {stackTensors} from '../../../src/lib/pipeline/stack.js'

test('lays tensors end to end in one new tensor', () => {
  const a = Float32Array.of(1, 2)
  const b = Float32Array.of(3)
  const batch = stackTensors([a, b])
  assert.equal([...batch], [1, 2, 3])
  assert.is.not(batch.buffer, a.buffer)
  assert.equal([...stackTensors([])], [])
})

test('one tensor is the batch itself: a single image\'s pixels are not copied again', () => {
  const a = Float32Array.of(1, 2, 3)
  assert.is(stackTensors([a]), a)
})

test.run()

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {lazy} from '../../src/lib/lazy.js'

test('the value is made once and shared by concurrent callers', async () => {
  let made = 0
  const value = lazy(async () => ++made)
  assert.is(value.peek(), undefined)
  assert.is(value.current(), undefined)
  assert.equal(await Promise.all([value.get(), value.get()]), [1, 1])
  assert.is(await value.get(), 1)
  assert.is(value.peek(), 1)
  assert.is(made, 1)
})

test('a failed attempt is forgotten: the next call tries again', async () => {
  let attempts = 0
  const value = lazy(async () => {
    attempts++
    if (attempts === 1) throw new Error('first fails')
    return 'second'
  })
  await value.get().then(
    () => assert.unreachable(),
    (e: Error) => assert.is(e.message, 'first fails'),
  )
  assert.is(value.current(), undefined)
  assert.is(await value.get(), 'second')
  assert.is(attempts, 2)
})

test('reset forgets the value, and an attempt under way no longer counts as the value', async () => {
  let made = 0
  let release = () => {}
  const value = lazy(() => new Promise<number>((resolve) => (release = () => resolve(++made))))
  const first = value.get()
  value.reset()
  release()
  assert.is(await first, 1)
  assert.is(value.peek(), undefined)
  const second = value.get()
  release()
  assert.is(await second, 2)
  assert.is(value.peek(), 2)
})

test.run()

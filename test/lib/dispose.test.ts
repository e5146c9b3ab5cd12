import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {disposer} from '../../src/lib/dispose.js'

test('a disposer releases once however often it is asked, and tells that it was', async () => {
  let releases = 0
  const d = disposer(async () => void releases++)
  assert.is(d.disposed, false)
  await Promise.all([d.dispose(), d.dispose(), d[Symbol.asyncDispose]()])
  assert.is(releases, 1)
  assert.is(d.disposed, true)
})

test.run()

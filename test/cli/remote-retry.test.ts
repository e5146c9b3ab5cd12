import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {isConnectionError, isRetriedStatus, retryAfterMs, retryDelayMs} from '../../src/cli/remote/retry.js'

test('Retry-After is read as seconds or as an HTTP date; anything else is no answer', () => {
  const now = Date.parse('2026-11-26T12:00:00Z')
  assert.is(retryAfterMs('3', now), 3000)
  assert.is(retryAfterMs(['10'], now), 10_000)
  assert.is(retryAfterMs('Thu, 26 Nov 2026 12:00:05 GMT', now), 5000)
  assert.is(retryAfterMs('Thu, 26 Nov 2026 11:00:00 GMT', now), 0, 'a date already past: no wait')
  assert.is(retryAfterMs(undefined, now), undefined)
  assert.is(retryAfterMs('soon', now), undefined)
})

test("the server's Retry-After is waited for (at most a minute); otherwise the wait doubles from 0.25 s up to 10 s, half of it random", () => {
  assert.is(retryDelayMs(1, 2000), 2000)
  assert.is(retryDelayMs(1, 3_600_000), 60_000)
  const low = () => 0
  const high = () => 1
  assert.equal([1, 2, 3, 4, 8, 20].map((n) => retryDelayMs(n, undefined, low)), [125, 250, 500, 1000, 5000, 5000])
  assert.equal([1, 2, 3, 4, 8, 20].map((n) => retryDelayMs(n, undefined, high)), [250, 500, 1000, 2000, 10_000, 10_000])
})

test('429, 502, 503 and 504 and connection failures are retried; other answers and errors are not', () => {
  assert.equal([429, 502, 503, 504].map(isRetriedStatus), [true, true, true, true])
  assert.equal([400, 401, 413, 415, 500].map(isRetriedStatus), [false, false, false, false, false])
  assert.ok(isConnectionError(Object.assign(new Error('connect ECONNREFUSED'), {code: 'ECONNREFUSED'})))
  assert.ok(isConnectionError(Object.assign(new Error('other side closed'), {code: 'UND_ERR_SOCKET'})))
  assert.not.ok(isConnectionError(new Error('no code')))
  assert.not.ok(isConnectionError(Object.assign(new Error('aborted'), {code: 'UND_ERR_ABORTED'})))
})

test.run()

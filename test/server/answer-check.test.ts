// Answers are bound to their route's declaration: a success body that breaks its schema is not sent (500 internal
// instead, logged), an error code the route does not declare is reported, and the harness fails a test on either.
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {ModError} from '../../src/lib/errors.js'
import type {ModerationResult} from '../../src/lib/types.js'
import {fakeEngine, form, red, start, tempDir, testSettings} from './harness.js'

const dir = tempDir('mod-server-answer-check-')
const settings = testSettings(join(dir.path, 'cache'))

test.after(() => dir.remove())

/** A server whose engine answers `moderateImage` as given, and the problems it reports. */
async function serverWith(moderateImage: () => Promise<ModerationResult>) {
  const broken: string[] = []
  const running = await start(fakeEngine({isLoaded: () => true, moderateImage}), settings, {tmpDir: dir.path, brokenAnswer: (p) => broken.push(p)})
  return {...running, broken}
}

const safe = (source: string): ModerationResult => ({source, is_safe: true, violations: [], labels: [], not_evaluated: []})

const upload = async (base: string) => fetch(`${base}/v1/moderate`, {method: 'POST', body: form('file', [{name: 'a.png', data: await red()}])})

test('a result that breaks its schema is answered 500 internal, logged and reported, never sent', async () => {
  const server = await serverWith(async () => ({...safe('a.png'), is_safe: 'yes'}) as unknown as ModerationResult)
  try {
    const res = await upload(server.base)
    const body = await res.json()
    assert.is(res.status, 500)
    assert.equal(body, {error: {code: 'internal', message: 'internal error', request_id: res.headers.get('x-request-id')}})
    assert.is(server.broken.length, 1)
    assert.match(server.broken[0], /^POST \/v1\/moderate 200: the answer breaks its declared schema: .*\/is_safe must be boolean/)
    assert.ok(server.logs.some((line) => line.includes('the answer breaks its declared schema')))
  } finally {
    await server.stop()
  }
})

test('an error code the route does not declare is reported, and still answered', async () => {
  const server = await serverWith(async () => {
    throw new ModError('video_too_long', 'an image is no video')
  })
  try {
    const res = await upload(server.base)
    assert.equal([res.status, (await res.json()).error.code], [422, 'video_too_long'])
    assert.equal(server.broken, ["POST /v1/moderate 422: the error video_too_long is not among the route's declared errors"])
  } finally {
    await server.stop()
  }
})

test('the harness fails a test whose server gave a broken answer', async () => {
  const running = await start(fakeEngine({isLoaded: () => true, moderateImage: async () => ({...safe('a.png'), labels: [{}]}) as ModerationResult}), settings, {tmpDir: dir.path})
  await upload(running.base)
  try {
    await running.stop()
    assert.unreachable('stop() resolved')
  } catch (e) {
    assert.match((e as Error).message, /answers that break their declared schemas:\nPOST \/v1\/moderate 200/)
  }
})

test.run()

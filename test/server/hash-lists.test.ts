// The REST API with a policy's hash lists: the listed photo and a re-encoded, resized copy come back known_bad with
// their match (single, batch and JSON uploads), an unrelated photo without one, and /health says the lists run.
import {mkdirSync, readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {hammingDistance, hashFromHex} from '../../src/lib/signals/pdq/hash256.js'
import {hashImage} from '../../src/lib/signals/pdq/hash-media.js'
import {ROOT} from '../helpers/cli.js'
import {call, form, postJson, startWithPolicy, tempDir, testSettings, type Running} from './harness.js'
import {signalStates} from '../helpers/signals.js'

const dir = tempDir('mod-server-hash-lists-')
const settings = testSettings(join(dir.path, 'cache'))
const PHOTOS = join(ROOT, 'test', 'fixtures', 'photos')
const listed = readFileSync(join(PHOTOS, 'astronaut.jpg'))
const other = readFileSync(join(PHOTOS, 'coffee.jpg'))
let copy: Buffer
let distance = 0
let server: Running

test.before(async () => {
  const hash = (await hashImage(listed, settings.limits))[0].hash
  copy = await sharp(listed).resize(300).jpeg({quality: 50}).toBuffer()
  distance = hammingDistance(hashFromHex(hash), hashFromHex((await hashImage(copy, settings.limits))[0].hash))
  mkdirSync(join(dir.path, 'lists'))
  writeFileSync(join(dir.path, 'lists', 'banned.txt'), `${hash},case-1041,removed\n`)
  writeFileSync(join(dir.path, 'policy.yaml'), 'hash_lists:\n  banned:\n    file: lists/banned.txt\n')
  server = await startWithPolicy(join(dir.path, 'policy.yaml'), settings, {tmpDir: dir.path})
})

test.after(async () => {
  await server.stop()
  dir.remove()
})

const match = (d: number) => [{list: 'banned', label: 'case-1041', note: 'removed', distance: d, category: 'known_bad'}]

test('GET /health lists the hash-list signal as loaded', async () => {
  assert.equal((await call(`${server.base}/health`)).body.signals, signalStates({clip: 'loaded', pdq: 'loaded'}))
})

test('POST /v1/moderate: the listed photo is known_bad with its match', async () => {
  const r = await call(`${server.base}/v1/moderate`, {method: 'POST', body: form('file', [{name: 'a.jpg', data: listed}])})
  assert.is(r.status, 200)
  assert.equal(r.body.matches, match(0))
  assert.equal(r.body.violations.find((v: {name: string}) => v.name === 'known_bad'), {name: 'known_bad', confidence: 1, parent: null, threshold: 0.5})
})

test('POST /v1/moderate/batch: the resized copy matches, the unrelated photo does not', async () => {
  const r = await call(`${server.base}/v1/moderate/batch`, {
    method: 'POST',
    body: form('files', [
      {name: 'copy.jpg', data: copy},
      {name: 'other.jpg', data: other},
    ]),
  })
  assert.equal(r.body.results.map((x: {matches?: unknown}) => x.matches ?? null), [match(distance), null])
})

test('POST /v1/moderate/json: base64 of the copy matches', async () => {
  const r = await postJson(`${server.base}/v1/moderate/json`, {image_base64: copy.toString('base64')})
  assert.equal(r.body.matches, match(distance))
})

test.run()

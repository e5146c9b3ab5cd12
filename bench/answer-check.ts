/**
 * answer-check: what checking a /v1/moderate answer against its schema costs (src/server/answer-check.ts, the
 * compiled ajv validator the server runs on every JSON answer) beside the request itself. The body is a real
 * result of the default policy (11 categories, the NSFW specialist's evidence) on the toy CLIP model; the request
 * is the same image over POST /v1/moderate to an in-process server, one at a time. The toy model makes the request
 * far shorter than with a real CLIP model, so the share printed is an upper bound. Target: under 2 % of a request.
 */
import './no-telemetry.js'

import {readFile} from 'node:fs/promises'
import type {AddressInfo} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {readSettings} from '../src/lib/config/settings.js'
import {buildPolicy} from '../src/lib/config/policy.js'
import {createEngine} from '../src/lib/engine.js'
import {ModerationResult} from '../src/lib/schemas.js'
import {schemaProblem} from '../src/server/answer-check.js'
import {buildServer} from '../src/server/app.js'

const ROOT = join(import.meta.dirname, '..')
const photo = await readFile(join(ROOT, 'test/fixtures/photos/astronaut.jpg'))
const {engine: engineSettings, server: settings} = readSettings({cacheDir: join(tmpdir(), 'mod-bench-answer-check')}, {})
const engine = createEngine({preset: 'fast', modelDir: join(ROOT, 'test/fixtures/models/toy'), cacheDir: engineSettings.cacheDir, policy: buildPolicy(), limits: settings.limits})
await engine.load()
const body = await engine.moderateImage(photo, 'astronaut.jpg')

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

/** Microseconds per check, median of 9 rounds of 2000 (the first compiles the validator). */
function checkMicros(): number {
  if (schemaProblem(ModerationResult, body) !== undefined) throw new Error('the body does not match its schema')
  const rounds = Array.from({length: 9}, () => {
    const start = performance.now()
    for (let i = 0; i < 2000; i++) schemaProblem(ModerationResult, body)
    return ((performance.now() - start) * 1000) / 2000
  })
  return median(rounds)
}

/** Milliseconds per request, median of 60 after 10 to warm up. */
async function requestMillis(): Promise<number> {
  const server = buildServer(engine, settings, {log: () => {}})
  await new Promise<void>((resolve) => server.server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.server.address() as AddressInfo).port}/v1/moderate`
  const times: number[] = []
  for (let i = 0; i < 70; i++) {
    const form = new FormData()
    form.append('file', new Blob([new Uint8Array(photo)]), 'astronaut.jpg')
    const start = performance.now()
    const res = await fetch(url, {method: 'POST', body: form})
    await res.arrayBuffer()
    if (res.status !== 200) throw new Error(`answered ${res.status}`)
    if (i >= 10) times.push(performance.now() - start)
  }
  await server.close()
  return median(times)
}

const micros = checkMicros()
const millis = await requestMillis()
console.log(`body: ${JSON.stringify(body).length} bytes, ${body.labels.length} labels`)
console.log(`check: ${micros.toFixed(1)} µs; request: ${millis.toFixed(1)} ms; share: ${((micros / 1000 / millis) * 100).toFixed(3)} % (target < 2 %)`)
await engine.close()

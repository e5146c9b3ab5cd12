import {METHODS, request} from 'node:http'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {ROUTES} from '../../src/server/routes/index.js'
import {fakeEngine, start, tempDir, testSettings, type Running} from './harness.js'

// /metrics must not grow with what clients send: its request labels come from closed sets.

const dir = tempDir('mod-server-metrics-labels-')
const settings = testSettings(join(dir.path, 'cache'), {apiKey: 'k'})
let server: Running

test.before(async () => {
  server = await start(fakeEngine(), settings, {tmpDir: dir.path})
})
test.after(async () => {
  await server.stop()
  dir.remove()
})

/** One request with any method Node can send, answered or not; the body is drained. */
function send(method: string, path: string, headers: Record<string, string> = {}): Promise<void> {
  return new Promise((resolve) => {
    const req = request(`${server.base}${path}`, {method, headers, agent: false}, (res) => {
      res.resume()
      res.on('end', resolve)
      res.on('error', () => resolve())
    })
    req.on('error', () => resolve())
    // A CONNECT's answer comes as a tunnel, not a response.
    req.on('connect', (_res, socket) => {
      socket.destroy()
      resolve()
    })
    req.end()
  })
}

async function seriesOf(): Promise<string[]> {
  const text = await (await fetch(`${server.base}/metrics`, {headers: {'x-api-key': 'k'}})).text()
  return text.split('\n').filter((l) => l !== '' && !l.startsWith('#'))
}

/** A deterministic pseudo-random sequence, so that a failure can be replayed. */
function prng(seed: number): () => number {
  let s = seed
  return () => {
    s = (s * 1103515245 + 12345) % 2 ** 31
    return s / 2 ** 31
  }
}

const PATHS = ['/', '/v1', '/v1/moderate', '/v1/moderate/x', '/v1/jobs/', '/v1/jobs/a/b', '/docs', '/docs/x.js', '/health', '/metrics', '/wp-admin']

/** 1200 requests, 8 at a time: any method Node can send, known and unknown paths, with and without the key. */
async function randomRequests(random: () => number): Promise<void> {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]
  for (let i = 0; i < 1200; i += 8) {
    await Promise.all(
      Array.from({length: 8}, (_, j) => {
        const n = i + j
        const path = `${pick(PATHS)}${random() < 0.5 ? `/${n.toString(36)}` : ''}${random() < 0.3 ? `?q=${n}` : ''}`
        return send(pick(METHODS), path, random() < 0.5 ? {'x-api-key': 'k'} : {})
      }),
    )
  }
}

/** The methods each route answers: its declared ones (HEAD with GET), the document and the docs pages. */
function routeMethods(): Map<string, string[]> {
  const routes = new Map<string, string[]>([['other', []]])
  for (const r of ROUTES) routes.set(r.path, [...(routes.get(r.path) ?? []), ...(r.method === 'GET' ? ['GET', 'HEAD'] : [r.method])])
  for (const page of ['/openapi.json', '/docs', '/docs/*']) routes.set(page, ['GET', 'HEAD'])
  return routes
}

/** [method, route] of each request series. */
const requestLabels = (series: string[]): string[][] =>
  series.flatMap((line) => {
    const m = /^mod_http_request[a-z_]*\{(?:le="[^"]*",)?method="([^"]*)",route="([^"]*)"/.exec(line)
    return m ? [[m[1], m[2]]] : []
  })

test('2400 requests of random methods, paths and keys add no label value outside the closed sets', async () => {
  const routes = routeMethods()
  // The route is a declared one or `other`; the method one that route answers, OPTIONS, or `other`.
  const allowed = ([method, route]: string[]) => routes.has(route) && (method === 'OPTIONS' || method === 'other' || routes.get(route)?.includes(method))
  const before = await seriesOf()
  await randomRequests(prng(27))
  const after = await seriesOf()
  await randomRequests(prng(2027))
  const again = await seriesOf()
  for (const series of [after, again]) {
    const labels = requestLabels(series)
    assert.ok(labels.length > 0)
    assert.equal(labels.filter((l) => !allowed(l)), [])
  }
  // What stays open is the status, and the server alone chooses it among the few it answers.
  const statuses = new Set(again.flatMap((l) => /^mod_http_requests_total\{.*status="(\d+)"/.exec(l)?.slice(1) ?? []))
  assert.ok(statuses.size <= 10, [...statuses].join(' '))
  console.log(`series: ${before.length} before, ${after.length} after 1200 random requests, ${again.length} after 1200 more`)
})

test.run()

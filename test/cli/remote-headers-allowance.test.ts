// An upload's headers limit in a remote run grows with the server's pace and the images in flight: a healthy
// server that scores the run's batches side by side answers each one later than a fixed limit allows.
import {createServer, type IncomingMessage, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {createClient} from '../../src/cli/remote/client.js'
import {headersAllowance} from '../../src/cli/remote/headers-allowance.js'

test('the first uploads have the base limit; then twice the slowest pace seen times the most images in flight, at most four times the base', () => {
  let clock = 0
  const allowance = headersAllowance(60_000, () => clock)
  const a = allowance.start(16)
  const b = allowance.start(16)
  assert.equal([a.limitMs, b.limitMs], [60_000, 60_000])
  clock = 32_000
  // 32 s for 32 images in flight: a second an image.
  a.done('answered')
  a.done('answered')
  const c = allowance.start(16)
  assert.is(c.limitMs, 60_000 + 2 * 1000 * 32)
  // A failure that is not a headers timeout teaches nothing; a wait given up says the server is at least that slow.
  clock = 33_000
  c.done('failed')
  assert.is(allowance.start(16).limitMs, 60_000 + 2 * 1000 * 32)
  clock = 200_000
  b.done('timed out')
  assert.is(allowance.start(16).limitMs, 240_000)
})

/**
 * A server that scores the images it holds side by side at `msPerImage` each: a request is answered once the
 * images in flight when it came (its own included) would be done. Counts the requests, and those whose client
 * gave up before the answer.
 */
function sideBySideServer(msPerImage: number, imagesPerRequest: number): Promise<{server: Server; base: string; requests: () => number; abandoned: () => number}> {
  let inFlight = 0
  let requests = 0
  let abandoned = 0
  const server = createServer((req: IncomingMessage, res) => {
    requests++
    req.resume()
    req.on('end', () => {
      inFlight += imagesPerRequest
      let answered = false
      const timer = setTimeout(() => {
        answered = true
        inFlight -= imagesPerRequest
        res.writeHead(200, {'content-type': 'application/json'}).end('{"ok":true}')
      }, inFlight * msPerImage)
      res.on('close', () => {
        if (answered) return
        clearTimeout(timer)
        inFlight -= imagesPerRequest
        abandoned++
      })
    })
  })
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, requests: () => requests, abandoned: () => abandoned}),
    ),
  )
}

test("a run's batches four at a time on a server that answers each after all the images in flight: every batch answered, only the first ones sent again", async () => {
  // 60 ms an image: four batches of 4 in flight are answered 960 ms after they come, past the 400 ms base limit.
  const fake = await sideBySideServer(60, 4)
  const client = createClient({server: fake.base, attempts: 4, timeouts: {headersMs: 400, bodyMs: 5000, idleMs: 5000}})
  try {
    const files = Array.from({length: 4}, (_, i) => ({name: `${i}.png`, data: Buffer.from('x')}))
    const queue = Array.from({length: 16}, (_, i) => i)
    let accepted = 0
    await Promise.all(
      Array.from({length: 4}, async () => {
        while (queue.shift() !== undefined) {
          const answer = await client.postFiles('v1/moderate/batch', 'files', files, 1024)
          assert.equal(answer.body, {ok: true})
          accepted++
        }
      }),
    )
    assert.is(accepted, 16)
    // The first wave, sent before any pace was known, may be given up once each; after it none is.
    assert.ok(fake.abandoned() <= 4, `${fake.abandoned()} requests given up, ${fake.requests()} sent`)
    assert.ok(fake.requests() <= 20, `${fake.requests()} requests`)
  } finally {
    await client.close()
    fake.server.closeAllConnections()
    await new Promise((resolve) => fake.server.close(resolve))
  }
})

test.run()

// A request that makes a job (POST /v1/jobs/video) is sent again only when no job can have been made: a lost
// answer could hide a job made, and a second one would run the same work again for nobody.
import {createServer, type IncomingMessage, type ServerResponse} from 'node:http'
import type {AddressInfo} from 'node:net'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {createClient} from '../../src/cli/remote/client.js'

type Answer = (req: IncomingMessage, res: ServerResponse, n: number) => void

/** A server answering its nth request (from 1) as `answers[n - 1]`, the last one for those after; counts them. */
async function withServer(answers: Answer[], body: (base: string, requests: () => number) => Promise<void>): Promise<void> {
  let n = 0
  const server = createServer((req, res) => {
    n++
    const answer = answers[Math.min(n, answers.length) - 1]
    req.resume()
    req.on('end', () => answer(req, res, n))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  try {
    await body(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`, () => n)
  } finally {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
}

const reset: Answer = (req) => req.socket.destroy()
const accepted: Answer = (_req, res) => res.writeHead(202, {'content-type': 'application/json'}).end('{"id":"j1"}')
const json = (status: number, code: string): Answer => (_req, res) =>
  res.writeHead(status, {'content-type': 'application/json', 'retry-after': '0'}).end(JSON.stringify({error: {code, message: 'not now'}}))
const page = (status: number): Answer => (_req, res) => res.writeHead(status, {'content-type': 'text/html'}).end('<html>Gateway Timeout</html>')

const video = [{name: 'clip.mp4', data: Buffer.from('not really a video')}]
async function post(base: string, creates: boolean) {
  const client = createClient({server: base, attempts: 3})
  try {
    return await client.postFiles('v1/jobs/video', 'file', video, 1024, {}, {creates})
  } finally {
    await client.close()
  }
}

test('a job POST whose connection is cut after it was sent is not sent again, and the error says the job may exist', async () => {
  await withServer([reset, accepted], async (base, requests) => {
    const e = await post(base, true).then(() => undefined, (x: unknown) => x as Error & {code: string})
    assert.is(e?.code, 'server_unreachable')
    assert.match(e?.message ?? '', /may have made the job, so it is not sent again/)
    assert.is(requests(), 1)
  })
  // A request that makes nothing (a batch of images to score) is sent again.
  await withServer([reset, accepted], async (base, requests) => {
    assert.equal((await post(base, false)).body, {id: 'j1'})
    assert.is(requests(), 2)
  })
})

test("a balancer's 504 page to a job POST is not retried; mod serve's own 503 overloaded and 429 are", async () => {
  await withServer([page(504), accepted], async (base, requests) => {
    const e = await post(base, true).then(() => undefined, (x: unknown) => x as Error & {code: string})
    assert.is(e?.code, 'server_unreachable')
    assert.match(e?.message ?? '', /an answer 504 not from mod serve/)
    assert.is(requests(), 1)
  })
  await withServer([json(503, 'overloaded'), json(429, 'too_many_uploads'), accepted], async (base, requests) => {
    assert.equal((await post(base, true)).body, {id: 'j1'})
    assert.is(requests(), 3)
  })
})

test('a job POST to an address where nothing listens is tried again: no job can have been made', async () => {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  await new Promise((resolve) => server.close(resolve))
  const e = await post(base, true).then(() => undefined, (x: unknown) => x as Error & {code: string})
  assert.is(e?.code, 'server_unreachable')
  assert.match(e?.message ?? '', /failed 3 times, last with ECONNREFUSED/)
})

test.run()

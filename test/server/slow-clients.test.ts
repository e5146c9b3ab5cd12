// Clients that send their body slowly, on real sockets from several loopback addresses (127.0.0.2, …: the whole
// 127/8 reaches a server on 127.0.0.1): the minimum body rate frees the places they hold, and one address cannot
// hold more than its share.
import {mkdirSync, readdirSync} from 'node:fs'
import {createServer, request, type ClientRequest, type IncomingMessage} from 'node:http'
import {connect, type AddressInfo} from 'node:net'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {buildServer} from '../../src/server/app.js'
import {readBody} from '../../src/server/body.js'
import {bodyStream} from '../../src/server/body-stream.js'
import {clientKey, networkKey} from '../../src/server/client-address.js'
import {call, errorOf, fakeEngine, form, multipartParts, rawError, rawRequest, start, tempDir, testSettings, until, type SettingsOverrides} from './harness.js'

const dir = tempDir('mod-server-slow-')
const uploads = join(dir.path, 'uploads')
mkdirSync(uploads)

test.after(() => dir.remove())

const image = (name: string) => ({method: 'POST', body: form('file', [{name, data: 'x'}])})

function server(limits: SettingsOverrides['limits']) {
  const settings = testSettings(join(dir.path, 'cache'), {limits})
  return start(fakeEngine(), {...settings, jobs: {...settings.jobs, storage: join(dir.path, 'jobs')}}, {tmpDir: uploads})
}

/** What each route's body starts with: a multipart file part, or the start of a JSON string. */
function opening(path: string): {head: Buffer; type: string} {
  if (path.endsWith('/json')) return {head: Buffer.from('{"image_base64": "'), type: 'application/json'}
  const {head, type} = multipartParts('file', 'slow.bin')
  return {head, type}
}

/**
 * A client that sends the start of its body from `from`, then one byte every `everyMs` (or nothing when 0) until
 * answered or `cut()`.
 */
function slowClient(base: string, path: string, from: string, everyMs: number) {
  const {head, type} = opening(path)
  let client: ClientRequest | undefined
  let ticker: NodeJS.Timeout | undefined
  const answer = rawRequest(
    `${base}${path}`,
    {headers: {'content-type': type, 'content-length': head.length + 100_000}, timeoutMs: 20_000, localAddress: from},
    (req) => {
      client = req
      req.write(head)
      if (everyMs > 0) ticker = setInterval(() => req.write('A'), everyMs)
    },
  )
  const settled = answer.finally(() => clearInterval(ticker))
  settled.catch(() => {})
  return {
    answer: settled,
    cut: () => {
      clearInterval(ticker)
      client?.destroy()
    },
  }
}

test('bodies trickling a byte at a time hold every upload place only until they fall below MOD_BODY_MIN_RATE; then a normal client gets 200', async () => {
  // A byte every 40 ms is never silent for MOD_BODY_TIMEOUT_MS, but is 25 bytes/s against a minimum of 1000.
  const s = await server({maxUploads: 4, maxUploadsPerClient: 2, bodyTimeoutMs: 400, bodyMinRate: 1000})
  const slow = [
    slowClient(s.base, '/v1/moderate', '127.0.0.2', 40),
    slowClient(s.base, '/v1/moderate/json', '127.0.0.3', 40),
    slowClient(s.base, '/v1/moderate/video', '127.0.0.4', 40),
    slowClient(s.base, '/v1/jobs/video', '127.0.0.5', 40),
  ]
  try {
    await until(() => s.handle.gate.receiving === 4)
    // From an address that trickles a body itself, which takes no one's place (slow-attack.test.ts).
    const {head, tail, type} = multipartParts('file', 'while-held.png')
    const whole = Buffer.concat([head, Buffer.from('x'), tail])
    const refused = await rawRequest(`${s.base}/v1/moderate`, {headers: {'content-type': type, 'content-length': whole.length}, localAddress: '127.0.0.2'}, (req) => req.end(whole))
    assert.equal([refused.status, rawError(refused).error.code], [503, 'overloaded'])
    for (const client of slow) {
      const answer = await client.answer
      assert.is(answer.status, 408)
      const {error} = rawError(answer)
      assert.is(error.code, 'request_timeout')
      assert.match(error.message, /^the request body is arriving too slowly: \d+ bytes in \d+\.\d s, less than 1000 bytes per second \(MOD_BODY_MIN_RATE\)$/)
    }
    assert.is(s.handle.gate.receiving, 0)
    assert.equal([readdirSync(uploads), readdirSync(join(dir.path, 'jobs'))], [[], []])
    const served = await call(`${s.base}/v1/moderate`, image('normal.png'))
    assert.equal([served.status, served.body.source], [200, 'normal.png'])
  } finally {
    for (const client of slow) client.cut()
    await s.stop()
  }
})

test('when every upload place is taken, a trickling video or job upload gives its place to a new request (408), its file removed', async () => {
  const s = await server({maxUploads: 2, bodyTimeoutMs: 5000, bodyMinRate: 1000})
  const slow = [slowClient(s.base, '/v1/moderate/video', '127.0.0.2', 0), slowClient(s.base, '/v1/jobs/video', '127.0.0.3', 0)]
  try {
    await until(() => s.handle.gate.receiving === 2)
    // Past their grace of 1 s, with only the head of their bodies in.
    await new Promise((resolve) => setTimeout(resolve, 1100))
    const first = await call(`${s.base}/v1/moderate`, image('first.png'))
    assert.equal([first.status, first.body.source], [200, 'first.png'])
    // The request answered gave its place back: a new body within its grace now fills it, and the next request
    // takes the place of the other trickling body.
    slow.push(slowClient(s.base, '/v1/moderate', '127.0.0.4', 0))
    await until(() => s.handle.gate.receiving === 2)
    const second = await call(`${s.base}/v1/moderate`, image('second.png'))
    assert.equal([second.status, second.body.source], [200, 'second.png'])
    for (const client of slow.slice(0, 2)) {
      const answer = await client.answer
      assert.is(answer.status, 408)
      assert.match(rawError(answer).error.message, /; its upload place went to another client$/)
    }
    await until(() => readdirSync(uploads).length === 0 && readdirSync(join(dir.path, 'jobs')).length === 0)
  } finally {
    for (const client of slow) client.cut()
    await s.stop()
  }
})

test('a body that keeps above MOD_BODY_MIN_RATE is read to the end', async () => {
  const s = await server({bodyTimeoutMs: 400, bodyMinRate: 1000})
  try {
    const {head, tail, type} = multipartParts('file', 'steady.png')
    // 2000 bytes in 20 writes of 100, 50 ms apart: about 2000 bytes/s, over a second in all.
    const answer = await rawRequest(`${s.base}/v1/moderate`, {headers: {'content-type': type, 'content-length': head.length + 2000 + tail.length}}, (req) => {
      req.write(head)
      let sent = 0
      const ticker = setInterval(() => {
        req.write(Buffer.alloc(100, 1))
        if (++sent < 20) return
        clearInterval(ticker)
        req.end(tail)
      }, 50)
    })
    assert.equal([answer.status, JSON.parse(answer.body).source], [200, 'steady.png'])
  } finally {
    await s.stop()
  }
})

test('a body that stops sending is told so, every time, also when its average rate falls too low at that moment', async () => {
  // At 1 GiB/s the head's bytes buy no time: the average is too low at the very moment the body has been silent for
  // MOD_BODY_TIMEOUT_MS. Each body got one message or the other (about 4 in 10 the rate's).
  const s = await server({bodyTimeoutMs: 300, bodyMinRate: 1024 ** 3, maxUploads: 100, maxUploadsPerClient: 100})
  try {
    const {head, type} = multipartParts('file', 'stalled.mp4')
    const stalled = () =>
      rawRequest(`${s.base}/v1/moderate/video`, {headers: {'content-type': type, 'content-length': head.length + 100_000}}, (req) => req.write(head))
    for (let round = 0; round < 2; round++) {
      for (const answer of await Promise.all(Array.from({length: 25}, stalled))) {
        assert.is(answer.status, 408)
        assert.equal(rawError(answer).error, {code: 'request_timeout', message: 'no part of the request body arrived for 300 ms (MOD_BODY_TIMEOUT_MS)'})
      }
    }
    // One that keeps sending, too slowly, is told its rate.
    const trickle = slowClient(s.base, '/v1/moderate/video', '127.0.0.2', 50)
    const slow = await trickle.answer
    assert.is(slow.status, 408)
    assert.match(rawError(slow).error.message, /^the request body is arriving too slowly: \d+ bytes in 0\.\d s, less than 1024 MiB per second \(MOD_BODY_MIN_RATE\)$/)
  } finally {
    await s.stop()
  }
})

test('a body keeping its pace has no clock of its own; a head that does not arrive whole in time gets one JSON 408', async () => {
  const settings = testSettings(join(dir.path, 'cache'), {limits: {bodyTimeoutMs: 5000, bodyMinRate: 1}})
  const s = buildServer(fakeEngine(), {...settings, jobs: {...settings.jobs, storage: join(dir.path, 'jobs')}}, {tmpDir: uploads, log: () => {}})
  // The head's 60 s, checked every 30 s, in production.
  Object.assign(s.server, {headersTimeout: 400, connectionsCheckingInterval: 20})
  await new Promise<void>((listening) => s.server.listen(0, '127.0.0.1', listening))
  const port = (s.server.address() as AddressInfo).port
  const open = (first: string, more: string) => {
    const socket = connect(port, '127.0.0.1')
    socket.on('error', () => {})
    socket.write(first)
    const ticker = setInterval(() => socket.write(more), 50)
    let got = ''
    socket.on('data', (d: Buffer) => (got += d.toString('latin1')))
    const closed = new Promise<string>((done) => socket.on('close', () => done(got)))
    return {closed, got: () => got, stop: () => (clearInterval(ticker), socket.destroy())}
  }
  try {
    const {head, type} = multipartParts('file', 'long.mp4')
    const body = open(`POST /v1/moderate/video HTTP/1.1\r\nHost: x\r\nContent-Type: ${type}\r\nContent-Length: 100000\r\n\r\n${head.toString('latin1')}`, 'A')
    const slowHead = open('GET /health HTTP/1.1\r\nHost: x\r\n', 'X-A: b\r\n')
    const got = await slowHead.closed
    assert.is(got.match(/HTTP\/1\.1 /g)?.length, 1, got)
    assert.match(got, /^HTTP\/1\.1 408 /)
    assert.match(got, /"code":"request_timeout","message":"the request line and headers did not arrive within 60 s"/)
    // The body has been arriving for several times the head's clock, unanswered.
    await new Promise((done) => setTimeout(done, 600))
    assert.is(body.got(), '')
    body.stop()
    await body.closed
  } finally {
    await s.close()
  }
})

test('one client address holds at most MOD_MAX_UPLOADS_PER_CLIENT upload places (job uploads included); more is 429, other clients are served', async () => {
  const s = await server({maxUploads: 10, maxUploadsPerClient: 2})
  const slow = [slowClient(s.base, '/v1/moderate', '127.0.0.2', 0), slowClient(s.base, '/v1/jobs/video', '127.0.0.2', 0)]
  try {
    await until(() => s.handle.gate.receiving === 2)
    for (const path of ['/v1/moderate', '/v1/moderate/json', '/v1/moderate/video', '/v1/jobs/video']) {
      const third = slowClient(s.base, path, '127.0.0.2', 0)
      const answer = await third.answer
      assert.equal([answer.status, answer.headers['retry-after']], [429, '1'], path)
      assert.equal(rawError(answer).error, {
        code: 'too_many_uploads',
        message: 'this client is already sending 2 uploads (a URL being fetched counts as one; MOD_MAX_UPLOADS_PER_CLIENT); wait for one to finish',
      })
    }
    const served = await call(`${s.base}/v1/moderate`, image('other-client.png'))
    assert.equal([served.status, served.body.source], [200, 'other-client.png'])
    slow[0].cut()
    await until(() => s.handle.gate.receiving === 1)
    const again = slowClient(s.base, '/v1/moderate', '127.0.0.2', 0)
    await until(() => s.handle.gate.receiving === 2)
    again.cut()
  } finally {
    for (const client of slow) client.cut()
    await until(() => s.handle.gate.receiving === 0)
    await s.stop()
  }
})

test('a job upload takes an upload place, but a full moderation queue does not refuse it', async () => {
  const s = await server({maxUploads: 1, queueLimit: 1})
  const tickets = [s.handle.gate.admit(), s.handle.gate.admit()]
  const job = slowClient(s.base, '/v1/jobs/video', '127.0.0.2', 0)
  try {
    await until(() => s.handle.gate.receiving === 1)
    const refused = await call(`${s.base}/v1/moderate`, image('no-place.png'))
    assert.equal(errorOf(refused), {status: 503, code: 'overloaded'})
  } finally {
    job.cut()
    for (const ticket of tickets) ticket.release()
    await until(() => s.handle.gate.receiving === 0)
    await s.stop()
  }
})

test('a body asked for after its client went away fails at once (its upload place is given back)', async () => {
  const gone = new Promise<IncomingMessage>((resolve) => {
    const server = createServer((req) => req.on('close', () => resolve(req)))
    server.listen(0, '127.0.0.1', () => {
      const client = request(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`, {method: 'POST', headers: {'content-length': 100}})
      client.on('error', () => server.close())
      client.write('x')
      setTimeout(() => client.destroy(), 100)
    })
  })
  const req = await gone
  const error = await readBody(req, {maxBytes: 1000, room: 'the test limit', idleMs: 60_000, minRate: 1}).catch((e: Error & {code: string}) => e)
  assert.equal([(error as {code: string}).code, (error as Error).message], ['bad_request', 'the request was cancelled by the client'])
})

test('time the server holds the body back (its reader is behind) does not count against MOD_BODY_MIN_RATE', async () => {
  const size = 200_000
  const received = new Promise<number | string>((resolve) => {
    const server = createServer((req) => {
      // A 1 MB/s minimum: the bytes that fit in the stream's buffers are due long before the reader starts.
      const body = bodyStream(req, {idleMs: 100, minRate: 1_000_000, maxBytes: size, room: 'the test limit'})
      let total = 0
      body.on('error', (e) => resolve(e.message))
      setTimeout(() => {
        body.on('data', (chunk: Buffer) => (total += chunk.length))
        body.on('end', () => resolve(total))
      }, 600)
    })
    server.listen(0, '127.0.0.1', () => {
      const client = request(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`, {method: 'POST', headers: {'content-length': size}})
      client.on('error', () => {})
      client.end(Buffer.alloc(size, 1))
      void received.then(() => {
        client.destroy()
        server.close()
      })
    })
  })
  assert.is(await received, size)
})

/** Sends a GET /health whose declared body of `declared` bytes follows `chunk` bytes every `everyMs`; resolves with
 * what came back once the connection closed, or after `openMs` (closed: false), with the time it took. */
function unreadBody(base: string, declared: number, chunk: number, everyMs: number, openMs: number, then = '') {
  const {port} = new URL(base)
  const socket = connect(Number(port), '127.0.0.1')
  const started = Date.now()
  socket.write(`GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: ${declared}\r\n\r\n`)
  let sent = 0
  const ticker = setInterval(() => {
    const n = Math.min(chunk, declared - sent)
    sent += n
    socket.write(Buffer.alloc(n, 65))
    if (sent === declared) {
      clearInterval(ticker)
      if (then) socket.write(then)
    }
  }, everyMs)
  let got = ''
  socket.on('data', (d) => (got += d))
  socket.on('error', () => {})
  return new Promise<{closed: boolean; ms: number; got: string}>((resolve) => {
    const done = (closed: boolean) => {
      clearInterval(ticker)
      socket.destroy()
      resolve({closed, ms: Date.now() - started, got})
    }
    const wait = setTimeout(() => done(false), openMs)
    socket.on('close', () => {
      clearTimeout(wait)
      done(true)
    })
  })
}

test('a body no route reads is held to the same pace once answered: trickling, its connection is cut; keeping pace, the connection carries the next request', async () => {
  const s = await server({bodyTimeoutMs: 400, bodyMinRate: 1000})
  try {
    // A byte every 40 ms: 25 bytes/s against a minimum of 1000, never silent for 400 ms.
    const trickle = await unreadBody(s.base, 100_000, 1, 40, 5000)
    assert.ok(trickle.got.startsWith('HTTP/1.1 200'), trickle.got)
    assert.ok(trickle.closed, 'a trickling unread body keeps its connection')
    // Its rate's deadline is 400 ms after the answer, plus what it sent meanwhile.
    assert.ok(trickle.ms >= 400, `cut after ${trickle.ms} ms`)
    // 2 000 bytes/s for 1.5 s, then a second request on the same connection.
    const steady = await unreadBody(s.base, 3000, 100, 50, 5000, 'GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
    assert.is(steady.got.match(/HTTP\/1\.1 200/g)?.length, 2, steady.got)
  } finally {
    await s.stop()
  }
})

test("no clock for a whole request: Node's own (5 minutes) cut a large upload arriving at a steady pace; the head keeps its 60 s", async () => {
  const s = await server({})
  try {
    assert.is(s.handle.server.requestTimeout, 0)
    assert.is(s.handle.server.headersTimeout, 60_000)
  } finally {
    await s.stop()
  }
})

test('clients are counted by IPv4 address (IPv4-mapped too) and by IPv6 /64', () => {
  assert.is(clientKey('192.0.2.7'), '192.0.2.7')
  assert.is(clientKey('::ffff:192.0.2.7'), '192.0.2.7')
  assert.is(clientKey('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64')
  assert.is(clientKey('2001:0db8:0001:0002:ffff:ffff:ffff:ffff'), '2001:db8:1:2::/64')
  assert.is(clientKey('2001:db8::5'), '2001:db8:0:0::/64')
  assert.is(clientKey('fe80::1%eth0'), 'fe80:0:0:0::/64')
  assert.is(clientKey('::1'), '0:0:0:0::/64')
})

test('a slow body is judged by the network it comes from: an IPv4 address, or an IPv6 /56', () => {
  assert.is(networkKey('192.0.2.7'), '192.0.2.7')
  assert.is(networkKey('::ffff:192.0.2.7'), '192.0.2.7')
  assert.is(networkKey('2001:db8:1:2:aaaa::1'), '2001:db8:1:0::/56')
  assert.is(networkKey('2001:db8:1:ff:aaaa::1'), '2001:db8:1:0::/56')
  assert.is(networkKey('2001:db8:1:1ff::1'), '2001:db8:1:100::/56')
})

test.run()

// An upload refused before its body is read (here: a body declared larger than the limit) is answered at once, and
// the answer must reach a client that is still sending: the server ends its side of the connection and reads on
// for a while, rather than closing with unread bytes, which resets the connection under the client's writes.
import {connect, type AddressInfo, type Socket} from 'node:net'
import {join} from 'node:path'
import {Writable} from 'node:stream'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {buildServer, type ModServer} from '../../src/server/app.js'
import {LINGER} from '../../src/server/linger.js'
import {createLogger} from '../../src/server/logger.js'
import {fakeEngine, multipartParts, start, tempDir, testSettings, type Running} from './harness.js'

const dir = tempDir('mod-server-early-answer-')
const settings = testSettings(join(dir.path, 'cache'), {limits: {maxBytes: 64 * 1024}})
let server: Running
/** A server that times out a request head after 300 ms (Node's own 60 s, checked every 30 s, in production). */
let impatient: ModServer
let impatientPort = 0
const records: {msg?: string; path?: string}[] = []
const accepted = new Set<Socket>()

test.before(async () => {
  server = await start(fakeEngine(), settings, {tmpDir: dir.path})
  const destination = new Writable({
    write(chunk, _encoding, done) {
      records.push(JSON.parse(String(chunk)))
      done()
    },
  })
  impatient = buildServer(fakeEngine(), settings, {tmpDir: dir.path, log: () => {}, logger: createLogger({level: 'info', destination})})
  Object.assign(impatient.server, {headersTimeout: 300, requestTimeout: 600, connectionsCheckingInterval: 50})
  await new Promise<void>((listening) => impatient.server.listen(0, '127.0.0.1', listening))
  impatientPort = (impatient.server.address() as AddressInfo).port
  for (const s of [server.handle.server, impatient.server]) s.on('connection', (socket: Socket) => accepted.add(socket))
})

test.after(async () => {
  // A connection the server failed to let go of (the failure a test below reports) would hold its close for ever.
  for (const socket of accepted) socket.destroy()
  await server.stop()
  await impatient.close()
  dir.remove()
})

interface Sending {
  /** Everything the server sent, once it ended its side or the connection broke. */
  answer: Promise<string>
  /** The first error of the connection (a write that met a reset), if any. */
  error(): Error | undefined
  /** Bytes of body written so far. */
  written(): number
  closed: Promise<void>
  socket: Socket
}

/** Sends the head of a 10 MiB multipart upload, then body chunks of `chunk` bytes, one per `gapMs`, until stopped. */
function send(chunk: number, gapMs: number): Sending {
  const {head, type} = multipartParts('file', 'huge.png')
  // Half-open allowed, as an HTTP client that writes its body on whatever it reads: the server's end does not end it.
  const socket = connect({port: Number(new URL(server.base).port), host: '127.0.0.1', allowHalfOpen: true})
  let error: Error | undefined
  let written = 0
  let text = ''
  socket.on('error', (e) => (error ??= e))
  socket.setEncoding('utf8').on('data', (d: string) => (text += d))
  const answer = new Promise<string>((done) => socket.on('end', () => done(text)).on('close', () => done(text)))
  const closed = new Promise<void>((done) => socket.on('close', () => done()))
  socket.write(`POST /v1/moderate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: ${type}\r\nContent-Length: ${10 * 1024 * 1024}\r\n\r\n`)
  socket.write(head)
  const timer = setInterval(() => {
    if (socket.destroyed || socket.writableEnded) return clearInterval(timer)
    socket.write(Buffer.alloc(chunk, 1), () => (written += chunk))
  }, gapMs)
  socket.on('close', () => clearInterval(timer))
  return {answer, error: () => error, written: () => written, closed, socket}
}

test('a client still sending a refused upload gets the whole 413 answer, then the end of the connection, and its writes meet no reset', async () => {
  const sending = send(16 * 1024, 10)
  const answer = await sending.answer
  assert.match(answer, /^HTTP\/1\.1 413 /)
  assert.match(answer, /\r\nconnection: close\r\n/i)
  assert.match(answer, /"code":"payload_too_large"/)
  // The server has ended its side and reads on: the client's writes keep succeeding.
  const before = sending.written()
  await new Promise((done) => setTimeout(done, 300))
  assert.is(sending.error(), undefined, 'a write met a reset')
  assert.ok(sending.written() > before, 'the client could not write on')
  sending.socket.destroy()
})

test('what a refused upload still sends is read for a bounded number of bytes only: then the connection is cut', async () => {
  // As fast as it goes: the byte bound is reached long before the time bound.
  const sending = send(1024 * 1024, 1)
  const started = Date.now()
  await sending.closed
  assert.ok(Date.now() - started < LINGER.ms, `cut after ${Date.now() - started} ms, not at ${LINGER.bytes} bytes`)
  // What the kernel's buffers hold on both sides aside, no more than the bound was taken.
  assert.ok(sending.written() < LINGER.bytes + 16 * 1024 * 1024, `${sending.written()} bytes written`)
})

test('a client that trickles on after the answer is cut once the server has waited long enough', async () => {
  const sending = send(1, 50)
  await sending.answer
  const answered = Date.now()
  await sending.closed
  const waited = Date.now() - answered
  assert.ok(waited >= LINGER.ms - 200 && waited < LINGER.ms + 1500, `cut ${waited} ms after the answer`)
})

/** Resolves once `s` holds no connection; rejects after `ms`. */
async function released(s: ModServer, ms: number): Promise<void> {
  const end = Date.now() + ms
  const held = () => new Promise<number>((done, fail) => s.server.getConnections((e, n) => (e ? fail(e) : done(n))))
  while ((await held()) > 0) {
    if (Date.now() > end) throw new Error(`the server still holds ${await held()} connections`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** The clients of keepOpen, closed after each test whatever it found (an open one would hold the server's close). */
const kept = new Set<Socket>()

test.after.each(() => {
  for (const socket of kept) socket.destroy()
  kept.clear()
})

interface Kept {
  /** What the server sent, once it ended its side. */
  answer: Promise<string>
  closed: Promise<void>
  socket: Socket
}

/**
 * A client that writes `request`, keeps its side of the connection open, and then sends `more` every `gapMs`
 * (nothing when absent) for as long as the connection lets it.
 */
function keepOpen(port: number, request: string, more?: {bytes: string | Buffer; gapMs: number}): Kept {
  const socket = connect({port, host: '127.0.0.1', allowHalfOpen: true}, () => socket.write(request))
  kept.add(socket)
  let text = ''
  socket.on('error', () => {})
  socket.setEncoding('utf8').on('data', (d: string) => (text += d))
  const answer = new Promise<string>((done) => socket.on('end', () => done(text)).on('close', () => done(text)))
  const closed = new Promise<void>((done) => socket.on('close', () => done()))
  if (more) {
    const timer = setInterval(() => {
      if (socket.destroyed) return clearInterval(timer)
      socket.write(more.bytes)
    }, more.gapMs)
    socket.on('close', () => clearInterval(timer))
  }
  return {answer, closed, socket}
}

test('what a client floods after an answer written on the socket is read for a bounded number of bytes only', async () => {
  const port = Number(new URL(server.base).port)
  const flood = {bytes: Buffer.alloc(1024 * 1024, 0x41), gapMs: 1}
  const clients = [keepOpen(port, 'CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n', flood), keepOpen(port, 'GARBAGE\r\n\r\n', flood)]
  const started = Date.now()
  await Promise.race([Promise.all(clients.map((c) => c.closed)), new Promise((done) => setTimeout(done, LINGER.ms))])
  assert.ok(Date.now() - started < LINGER.ms, `cut after ${Date.now() - started} ms, not at ${LINGER.bytes} bytes`)
})

test('an answer written on the socket (CONNECT, bytes that are not HTTP, headers too large, a 408) closes in stages: the server lets go within the bound, whatever the client keeps open or sends', async () => {
  const port = Number(new URL(server.base).port)
  const clients = [
    keepOpen(port, 'CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n'),
    keepOpen(port, 'CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n', {bytes: 'more', gapMs: 100}),
    keepOpen(port, 'GARBAGE\r\n\r\n'),
    keepOpen(port, 'GARBAGE\r\n\r\n', {bytes: 'more', gapMs: 100}),
    keepOpen(port, `GET /health HTTP/1.1\r\nHost: x\r\nX-Padding: ${'p'.repeat(20 * 1024)}\r\n\r\n`),
  ]
  // A head that trickles in: a header line every 100 ms, on and on.
  const trickle = keepOpen(impatientPort, 'GET /health HTTP/1.1\r\nHost: x\r\n', {bytes: 'X-A: b\r\n', gapMs: 100})
  const answers = await Promise.all(clients.map((c) => c.answer))
  const answered = Date.now()
  assert.equal(
    answers.map((a) => a.split('\r\n')[0]),
    ['HTTP/1.1 405 Method Not Allowed', 'HTTP/1.1 405 Method Not Allowed', 'HTTP/1.1 400 Bad Request', 'HTTP/1.1 400 Bad Request', 'HTTP/1.1 431 Request Header Fields Too Large'],
  )
  assert.match(await trickle.answer, /^HTTP\/1\.1 408 Request Timeout\r\n/)
  // The head completed after its answer is no request of its own: no answer, no access line.
  trickle.socket.write('\r\n')
  // The server reads on after its answer: a client that sends on meets no reset at first.
  await new Promise((done) => setTimeout(done, 300))
  assert.equal([...clients, trickle].map((c) => c.socket.destroyed), [false, false, false, false, false, false])
  // A quiet client's connection stays open on its side (the server's FIN came long ago): only the server's count tells.
  await Promise.all([released(server.handle, LINGER.ms + 1500), released(impatient, LINGER.ms + 1500)])
  const waited = Date.now() - answered
  assert.ok(waited >= LINGER.ms - 300, `let go ${waited} ms after the answers`)
  assert.equal(records.filter((r) => r.msg === 'request').map((r) => r.path), [undefined], JSON.stringify(records))
})

test.run()

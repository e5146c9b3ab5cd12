// An upload refused before its body is read (here: a body declared larger than the limit) is answered at once, and
// the answer must reach a client that is still sending: the server ends its side of the connection and reads on
// for a while, rather than closing with unread bytes, which resets the connection under the client's writes.
import {connect, type Socket} from 'node:net'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {LINGER} from '../../src/server/linger.js'
import {fakeEngine, multipartParts, start, tempDir, testSettings, type Running} from './harness.js'

const dir = tempDir('mod-server-early-answer-')
const settings = testSettings(join(dir.path, 'cache'), {limits: {maxBytes: 64 * 1024}})
let server: Running

test.before(async () => {
  server = await start(fakeEngine(), settings, {tmpDir: dir.path})
})

test.after(async () => {
  await server.stop()
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

test.run()

// undici 7 aborts the process when a server closes its connection after a body that the client is still reading
// slowly (its parser stopped by backpressure): mod reads bodies as they arrive, or gives them room to wait.
import {createServer} from 'node:http'
import type {AddressInfo} from 'node:net'
import {Readable, Writable} from 'node:stream'
import {pipeline} from 'node:stream/promises'
import {setTimeout as sleep} from 'node:timers/promises'
import {test} from 'uvu'
import * as assert from 'uvu/assert'
import {request} from 'undici'

import {BODY_BUFFER_BYTES, copyEagerly} from '../../../src/lib/fetch/body-buffer.js'

const BODY = Buffer.alloc(12_000_000, 7)

/** A server answering BODY, then closing its connection; the URL to it, for `use`. */
async function closingServer(use: (url: string) => Promise<void>): Promise<void> {
  const server = createServer((_req, res) => res.writeHead(200, {'content-length': BODY.length, connection: 'close'}).end(BODY))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  try {
    await use(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`)
  } finally {
    server.close()
  }
}

test('a 12 MB body from a server that closes the connection after it is read whole by a slow consumer given room', async () => {
  await closingServer(async (url) => {
    // With undici's default room (64 KiB) the first such read ends the process: AssertionError in Parser.finish.
    for (let i = 0; i < 2; i++) {
      const res = await request(url, {highWaterMark: BODY_BUFFER_BYTES})
      let received = 0
      const slow = new Writable({
        highWaterMark: 1024,
        write(chunk: Buffer, _encoding, done) {
          received += chunk.length
          setTimeout(done, 1)
        },
      })
      await pipeline(res.body, slow)
      assert.is(received, BODY.length)
    }
  })
})

test('copyEagerly reads such a body whole into a slow writer with undici\'s default room', async () => {
  await closingServer(async (url) => {
    for (let i = 0; i < 2; i++) {
      const res = await request(url)
      let written = 0
      await copyEagerly(res.body, async (chunk) => {
        written += chunk.length
        await sleep(1)
      })
      assert.is(written, BODY.length)
    }
  })
})

test('copyEagerly writes every chunk a failing body delivered before throwing its error; a write that throws stops it', async () => {
  const failing = new Readable({read() {}})
  failing.push(Buffer.from('abc'))
  failing.push(Buffer.from('def'))
  setImmediate(() => failing.destroy(new Error('connection dropped')))
  const written: string[] = []
  const error = await copyEagerly(failing, async (chunk) => {
    await sleep(5)
    written.push(chunk.toString())
  }).catch((e: unknown) => e)
  assert.equal([written, (error as Error).message], [['abc', 'def'], 'connection dropped'])

  const endless = new Readable({read() {
    this.push(Buffer.alloc(1024))
  }})
  const limit = await copyEagerly(endless, () => {
    throw new Error('too large')
  }).catch((e: unknown) => e)
  assert.equal([(limit as Error).message, endless.destroyed], ['too large', true])
})

test.run()

// undici 7 aborts the process when a server closes its connection after a body that the client is still reading
// slowly (its parser stopped by backpressure): mod's requests give bodies room to be read whatever the consumer's pace.
import {createServer} from 'node:http'
import type {AddressInfo} from 'node:net'
import {Writable} from 'node:stream'
import {pipeline} from 'node:stream/promises'
import {test} from 'uvu'
import * as assert from 'uvu/assert'
import {request} from 'undici'

import {BODY_BUFFER_BYTES} from '../../../src/lib/fetch/body-buffer.js'

const BODY = Buffer.alloc(12_000_000, 7)

test('a 12 MB body from a server that closes the connection after it is read whole by a slow consumer', async () => {
  const server = createServer((_req, res) => res.writeHead(200, {'content-length': BODY.length, connection: 'close'}).end(BODY))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
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
  } finally {
    server.close()
  }
})

test.run()

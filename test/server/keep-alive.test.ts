// How long an idle connection is kept for the client's next request: MOD_KEEPALIVE_TIMEOUT_MS, which a proxy
// keeping its own connections to the server needs above its idle timeout.
import {connect} from 'node:net'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {readSettings} from '../../src/lib/config/settings.js'
import {fakeEngine, start, tempDir, testSettings} from './harness.js'

const dir = tempDir('mod-keep-alive-')
test.after(() => dir.remove())

/** Two GET /health on one connection, the second `gapMs` after the first answer; what came back and when it closed. */
function twoRequests(base: string, gapMs: number) {
  const socket = connect(Number(new URL(base).port), '127.0.0.1')
  let got = ''
  let lastAnswer = 0
  socket.on('data', (d: Buffer) => {
    got += d.toString('latin1')
    lastAnswer = Date.now()
  })
  socket.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n')
  const second = setTimeout(() => socket.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n'), gapMs)
  return new Promise<{got: string; idleMs: number}>((resolve, reject) => {
    const giveUp = setTimeout(() => reject(new Error(`the connection is still open: ${got.slice(0, 200)}`)), 10_000)
    socket.on('close', () => {
      clearTimeout(second)
      clearTimeout(giveUp)
      resolve({got, idleMs: Date.now() - lastAnswer})
    })
  })
}

test('an idle connection is kept MOD_KEEPALIVE_TIMEOUT_MS after its last answer, as the answers say, then closed', async () => {
  const s = await start(fakeEngine(), testSettings(dir.path, {keepAliveMs: 2500}))
  try {
    // Idle 1.5 s between the two: within the 2.5 s set.
    const {got, idleMs} = await twoRequests(s.base, 1500)
    assert.is(got.match(/HTTP\/1\.1 200 /g)?.length, 2, got)
    assert.is(got.match(/^Keep-Alive: timeout=2\r$/gm)?.length, 2, got)
    assert.ok(idleMs >= 2000 && idleMs < 6000, `closed ${idleMs} ms after the last answer`)
  } finally {
    await s.stop()
  }
})

test('MOD_KEEPALIVE_TIMEOUT_MS: 5 s unless set; a whole number of ms from 1', () => {
  assert.is(readSettings({}, {}).server.keepAliveMs, 5000)
  assert.is(readSettings({}, {MOD_KEEPALIVE_TIMEOUT_MS: '65000'}).server.keepAliveMs, 65_000)
  for (const bad of ['0', '5s', '-1', '1.5']) {
    assert.throws(() => readSettings({}, {MOD_KEEPALIVE_TIMEOUT_MS: bad}), new RegExp(`MOD_KEEPALIVE_TIMEOUT_MS="${bad.replace('.', '\\.')}" is not valid: expected a whole number from 1 to`))
  }
})

test.run()

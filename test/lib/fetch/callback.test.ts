import {createHmac} from 'node:crypto'
import {createServer, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {callbackAddresses, sendCallback, signature} from '../../../src/lib/fetch/callback.js'

let server: Server
let port: number
/** Status the receiver answers, request by request; 204 once the list is used up. */
let answers: number[] = []
const received: {signature: string | undefined; body: string; type: string | undefined}[] = []

test.before(async () => {
  server = createServer((req, res) => {
    let body = ''
    req.setEncoding('utf8').on('data', (d: string) => (body += d))
    req.on('end', () => {
      received.push({signature: req.headers['x-mod-signature'] as string | undefined, body, type: req.headers['content-type']})
      res.writeHead(answers.shift() ?? 204).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  port = (server.address() as AddressInfo).port
})

test.after(() => new Promise<void>((resolve) => server.close(() => resolve())))

test.before.each(() => {
  answers = []
  received.length = 0
})

test('the signature is sha256= and the hex HMAC-SHA256 of the body with the secret', () => {
  assert.is(signature('key', '{"a":1}'), `sha256=${createHmac('sha256', 'key').update('{"a":1}').digest('hex')}`)
})

test('a callback is POSTed as JSON with its signature; a 5xx answer is retried until a 2xx', async () => {
  answers = [500, 503]
  const body = JSON.stringify({id: 'j1', status: 'done'})
  const attempts = await sendCallback(`http://127.0.0.1:${port}/hook?x=1`, body, {secret: 's', allowPrivate: true, backoffMs: 1})
  assert.is(attempts, 3)
  assert.equal(received.map((r) => r.body), [body, body, body])
  assert.is(received[2].signature, signature('s', body))
  assert.is(received[2].type, 'application/json')
})

test('the attempts are bounded: the last problem is reported', async () => {
  answers = [500, 500, 500]
  try {
    await sendCallback(`http://127.0.0.1:${port}/hook`, '{}', {allowPrivate: true, attempts: 3, backoffMs: 1})
    assert.unreachable('should fail')
  } catch (e) {
    assert.is((e as {code: string}).code, 'url_fetch_failed')
    assert.match((e as Error).message, /answered HTTP 500/)
  }
  assert.is(received.length, 3)
})

test('without a secret no signature header is sent', async () => {
  await sendCallback(`http://127.0.0.1:${port}/hook`, '{}', {allowPrivate: true})
  assert.is(received[0].signature, undefined)
})

test('a callback URL refused for its scheme, credentials or port says it is the callback URL (a job also names image URLs)', async () => {
  const refusals: string[] = []
  for (const url of ['ftp://hooks.example/x', 'https://user:secret@hooks.example/x', 'http://hooks.example:6000/x']) {
    refusals.push(await callbackAddresses(url, {allowPrivate: true, resolve: async () => ['93.184.216.34']}).then(
      () => 'accepted',
      (e: {code: string; message: string}) => `${e.code}: ${e.message}`,
    ))
  }
  assert.equal(refusals, [
    'url_blocked: the callback URL uses ftp:; only http and https URLs are fetched',
    'url_blocked: the callback URL contains a user name or password, which is not allowed',
    'url_blocked: the callback URL uses port 6000, which is not fetched from',
  ])
})

test('private and loopback addresses are refused unless allowed, also behind a name, and never retried', async () => {
  for (const url of [`http://127.0.0.1:${port}/hook`, 'http://10.0.0.1/hook', 'http://[::1]/hook']) {
    try {
      await sendCallback(url, '{}', {allowPrivate: false, backoffMs: 1})
      assert.unreachable(url)
    } catch (e) {
      assert.is((e as {code: string}).code, 'url_blocked', url)
    }
  }
  const named = callbackAddresses('http://hooks.example/x', {allowPrivate: false, resolve: async () => ['93.184.216.34', '192.168.1.5']})
  await named.then(
    () => assert.unreachable('a name with one private answer is refused'),
    (e: {code: string}) => assert.is(e.code, 'url_blocked'),
  )
  assert.equal(
    (await callbackAddresses('https://hooks.example/x', {allowPrivate: false, resolve: async () => ['93.184.216.34']})).addresses,
    ['93.184.216.34'],
  )
  assert.is(received.length, 0)
})

test('localhost and its subdomains, with or without a trailing dot, are refused by name (422 url_blocked), as image URLs are', async () => {
  // A resolver that knows none of them: the refusal must not depend on its answer.
  const resolve = async (): Promise<string[]> => {
    throw new Error('ENOTFOUND')
  }
  for (const url of ['http://localhost./x', 'http://a.localhost/x', 'http://a.LOCALHOST./x']) {
    await callbackAddresses(url, {allowPrivate: false, resolve}).then(
      () => assert.unreachable(url),
      (e: {code: string; message: string}) => assert.equal([e.code, /names the loopback host/.test(e.message)], ['url_blocked', true], url),
    )
  }
  // With private callbacks allowed, the name is resolved as any other.
  assert.equal((await callbackAddresses('http://a.localhost/x', {allowPrivate: true, resolve: async () => ['127.0.0.1']})).addresses, ['127.0.0.1'])
})

test('only http(s) URLs without credentials are called', async () => {
  for (const url of ['ftp://hooks.example/x', 'http://user:pw@hooks.example/x', 'file:///etc/passwd']) {
    await callbackAddresses(url, {allowPrivate: true}).then(
      () => assert.unreachable(url),
      (e: {code: string}) => assert.is(e.code, 'url_blocked', url),
    )
  }
})

test.run()

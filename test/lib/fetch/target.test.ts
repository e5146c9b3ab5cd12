import {test} from 'uvu'
import * as assert from 'uvu/assert'
import {checkUrl, checkedAddresses, describeUrl, type Resolver} from '../../../src/lib/fetch/target.js'
import {ModError} from '../../../src/lib/errors.js'
import {rejection} from '../../helpers/errors.js'

function thrown(fn: () => unknown): ModError {
  try {
    fn()
  } catch (e) {
    if (e instanceof ModError) return e
    throw e
  }
  throw new Error('expected a ModError')
}

const answers = (...addresses: string[]): Resolver => async () => addresses

test('describes a URL by scheme, host and port only', () => {
  assert.is(describeUrl(new URL('https://user:secret@images.test:8443/a/b?token=x#f')), 'https://images.test:8443')
  assert.is(describeUrl(new URL('file:///etc/passwd')), 'file:')
})

test('accepts http and https on ordinary ports', () => {
  for (const u of ['http://images.test/', 'https://images.test/', 'http://images.test:8080/', 'https://images.test:443/']) {
    checkUrl(new URL(u), 'the URL')
  }
})

test('refuses schemes other than http and https', () => {
  for (const u of ['file:///etc/passwd', 'gopher://images.test/', 'ftp://images.test/a.png', 'data:image/png;base64,AA==']) {
    const e = thrown(() => checkUrl(new URL(u), 'the URL'))
    assert.is(e.code, 'url_blocked', u)
    assert.is(e.message, `the URL uses ${new URL(u).protocol}; only http and https URLs are fetched`)
  }
})

test('refuses credentials in the URL without repeating them', () => {
  const e = thrown(() => checkUrl(new URL('http://admin:hunter2@images.test/'), 'the redirect target'))
  assert.is(e.code, 'url_blocked')
  assert.is(e.message, 'the redirect target contains a user name or password, which is not allowed')
})

test('refuses the ports browsers refuse', () => {
  for (const port of ['25', '22', '6667', '10080']) {
    const e = thrown(() => checkUrl(new URL(`http://images.test:${port}/`), 'the URL'))
    assert.is(e.code, 'url_blocked')
    assert.is(e.message, `the URL uses port ${port}, which is not fetched from`)
  }
})

test('checks an IP literal without resolving it', async () => {
  const calls: string[] = []
  const resolve: Resolver = async (h) => (calls.push(h), [])
  assert.equal(await checkedAddresses(new URL('http://93.184.216.34/'), 'the URL', resolve), ['93.184.216.34'])
  const e = await rejection(checkedAddresses(new URL('http://0x7f.1/'), 'the URL', resolve))
  assert.is(e.code, 'url_blocked')
  assert.is(e.message, 'the URL http://127.0.0.1 is a loopback address; only public addresses are fetched')
  assert.equal(calls, [])
})

test('returns every checked answer of a public name, in order', async () => {
  const got = await checkedAddresses(new URL('http://images.test/'), 'the URL', answers('93.184.216.34', '2606:4700::1111', '::ffff:93.184.216.35'))
  assert.equal(got, ['93.184.216.34', '2606:4700::1111', '::ffff:5db8:d823'])
})

test('refuses a name when any of its answers is not public', async () => {
  const e = await rejection(checkedAddresses(new URL('http://images.test/'), 'the redirect target', answers('93.184.216.34', '10.0.0.7')))
  assert.is(e.code, 'url_blocked')
  assert.is(e.message, 'the redirect target host images.test resolves to 10.0.0.7, a private address; only public addresses are fetched')
})

test('refuses localhost names, with or without a trailing dot, without resolving them', async () => {
  const calls: string[] = []
  const failing: Resolver = async (h) => {
    calls.push(h)
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${h}`), {code: 'ENOTFOUND'})
  }
  for (const url of ['http://localhost./', 'http://LOCALHOST/', 'http://api.localhost./x.png']) {
    const e = await rejection(checkedAddresses(new URL(url), 'the URL', failing))
    assert.is(e.code, 'url_blocked', url)
    assert.match(e.message, /names the loopback host; only public addresses are fetched$/, url)
  }
  assert.equal(calls, [])
  assert.equal(await checkedAddresses(new URL('http://notlocalhost.test/'), 'the URL', answers('93.184.216.34')), ['93.184.216.34'])
})

test('refuses a resolver answer that is not an IP address', async () => {
  const e = await rejection(checkedAddresses(new URL('http://images.test/'), 'the URL', answers('localhost')))
  assert.is(e.code, 'url_blocked')
})

test('reports a name that does not resolve as a failed fetch', async () => {
  const failing: Resolver = async () => {
    throw Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.test'), {code: 'ENOTFOUND'})
  }
  const e = await rejection(checkedAddresses(new URL('http://nowhere.test/'), 'the URL', failing))
  assert.is(e.code, 'url_fetch_failed')
  assert.is(e.message, 'could not resolve nowhere.test')
  const empty = await rejection(checkedAddresses(new URL('http://nowhere.test/'), 'the URL', answers()))
  assert.is(empty.code, 'url_fetch_failed')
})

test.run()

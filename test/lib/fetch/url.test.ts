import {test} from 'uvu'
import * as assert from 'uvu/assert'
import {once} from 'node:events'
import {createServer, type IncomingMessage, type ServerResponse} from 'node:http'
import {createServer as createTlsServer, createSecureContext} from 'node:tls'
import type {AddressInfo, Server, Socket} from 'node:net'
import {connectionProblem, fetchImageUrl, type Dial, type FetchImageOptions, type Resolver} from '../../../src/lib/fetch/url.js'
import {rejection} from '../../helpers/errors.js'

// Addresses that pass the check; the dial hook sends their connections to the local test server.
const PUBLIC = '93.184.216.34'
const PUBLIC_2 = '93.184.216.35'
const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex')

interface Local {
  port: number
  requests: Array<{host?: string; url?: string}>
  /** Resolves when a server-side connection closes (the client dropped it). */
  closed: Promise<void>
  close: () => Promise<void>
}

async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<Local> {
  const requests: Local['requests'] = []
  let onClose: () => void = () => {}
  const closed = new Promise<void>((resolve) => (onClose = resolve))
  const server = createServer((req, res) => {
    requests.push({host: req.headers.host, url: req.url})
    handler(req, res)
  })
  server.on('connection', (socket: Socket) => socket.on('close', onClose))
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {port: (server.address() as AddressInfo).port, requests, closed, close: () => stop(server)}
}

async function stop(server: Server & {closeAllConnections?: () => void}): Promise<void> {
  server.closeAllConnections?.()
  await new Promise((resolve) => server.close(resolve))
}

/** A dial hook recording each checked address it is asked for, sending every connection to `port`. */
function dialTo(port: number, dialled: string[]): Dial {
  return (address, p) => {
    dialled.push(`${address}:${p}`)
    return {host: '127.0.0.1', port}
  }
}

function resolver(table: Record<string, string[]>, calls: string[] = []): Resolver {
  return async (hostname) => {
    calls.push(hostname)
    return table[hostname] ?? []
  }
}

function options(extra: Partial<FetchImageOptions>): FetchImageOptions {
  return {maxBytes: 1024 * 1024, timeoutMs: 2000, ...extra}
}

function within<T>(work: Promise<T>, ms: number): Promise<T> {
  return Promise.race([work, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`not within ${ms} ms`)), ms))])
}

test('a server that took the request and then kept silent, or stopped sending, is not called a failed connection', () => {
  assert.is(connectionProblem({code: 'UND_ERR_HEADERS_TIMEOUT'}), 'the server took the request but sent no answer in time')
  assert.is(connectionProblem({code: 'UND_ERR_BODY_TIMEOUT'}), 'the server stopped sending its answer')
  assert.is(connectionProblem({code: 'ECONNREFUSED'}), 'connection refused')
  assert.is(connectionProblem(new Error('no code')), 'the connection failed')
  assert.is(connectionProblem({code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE'}), 'its TLS certificate was not accepted')
  assert.is(connectionProblem({code: 'DEPTH_ZERO_SELF_SIGNED_CERT'}), 'its TLS certificate was not accepted')
})

test('returns the bytes and content type of a public image URL', async () => {
  const local = await serve((_req, res) => res.writeHead(200, {'content-type': 'image/png'}).end(PNG))
  const dialled: string[] = []
  const calls: string[] = []
  try {
    const got = await fetchImageUrl('http://images.test/cat.png?size=2#top', options({
      resolve: resolver({'images.test': [PUBLIC]}, calls),
      connect: dialTo(local.port, dialled),
    }))
    assert.ok(got.data.equals(PNG))
    assert.is(got.contentType, 'image/png')
    assert.is(got.finalUrl, 'http://images.test/cat.png?size=2#top')
    assert.equal(calls, ['images.test'])
    assert.equal(dialled, [`${PUBLIC}:80`])
    assert.equal(local.requests, [{host: 'images.test', url: '/cat.png?size=2'}])
  } finally {
    await local.close()
  }
})

test('follows redirects between public hosts, absolute and relative', async () => {
  const local = await serve((req, res) => {
    if (req.url === '/a') res.writeHead(302, {location: 'http://cdn.test:8080/b'}).end()
    else if (req.url === '/b') res.writeHead(307, {location: '/c'}).end()
    else res.writeHead(200).end(PNG)
  })
  const dialled: string[] = []
  try {
    const got = await fetchImageUrl('http://images.test/a', options({
      resolve: resolver({'images.test': [PUBLIC], 'cdn.test': [PUBLIC_2]}),
      connect: dialTo(local.port, dialled),
    }))
    assert.ok(got.data.equals(PNG))
    assert.is(got.finalUrl, 'http://cdn.test:8080/c')
    assert.equal(dialled, [`${PUBLIC}:80`, `${PUBLIC_2}:8080`, `${PUBLIC_2}:8080`])
    assert.equal(local.requests, [
      {host: 'images.test', url: '/a'},
      {host: 'cdn.test:8080', url: '/b'},
      {host: 'cdn.test:8080', url: '/c'},
    ])
  } finally {
    await local.close()
  }
})

test('refuses a redirect from a public host to a private one', async () => {
  const local = await serve((req, res) => {
    const location = req.url === '/literal' ? 'http://169.254.169.254/latest/meta-data' : 'http://internal.test/admin'
    res.writeHead(302, {location}).end()
  })
  const dialled: string[] = []
  const opts = options({
    resolve: resolver({'images.test': [PUBLIC], 'internal.test': ['192.168.1.10']}),
    connect: dialTo(local.port, dialled),
  })
  try {
    const literal = await rejection(fetchImageUrl('http://images.test/literal', opts))
    assert.is(literal.code, 'url_blocked')
    assert.is(literal.message, 'the redirect target http://169.254.169.254 is a link-local address; only public addresses are fetched')
    const named = await rejection(fetchImageUrl('http://images.test/named', opts))
    assert.is(named.code, 'url_blocked')
    assert.is(named.message, 'the redirect target host internal.test resolves to 192.168.1.10, a private address; only public addresses are fetched')
    assert.equal(dialled, [`${PUBLIC}:80`, `${PUBLIC}:80`])
  } finally {
    await local.close()
  }
})

test('refuses a redirect to a non-http scheme', async () => {
  const local = await serve((_req, res) => res.writeHead(301, {location: 'file:///etc/passwd'}).end())
  try {
    const e = await rejection(fetchImageUrl('http://images.test/', options({
      resolve: resolver({'images.test': [PUBLIC]}),
      connect: dialTo(local.port, []),
    })))
    assert.is(e.code, 'url_blocked')
    assert.is(e.message, 'the redirect target uses file:; only http and https URLs are fetched')
  } finally {
    await local.close()
  }
})

test('follows five redirects and refuses a sixth', async () => {
  const local = await serve((req, res) => {
    const n = Number(req.url?.slice(1))
    if (n < 5 || req.url === '/loop') res.writeHead(302, {location: n < 5 ? `/${n + 1}` : '/loop'}).end()
    else res.writeHead(200).end(PNG)
  })
  const opts = options({resolve: resolver({'images.test': [PUBLIC]}), connect: dialTo(local.port, [])})
  try {
    const got = await fetchImageUrl('http://images.test/0', opts)
    assert.is(got.finalUrl, 'http://images.test/5')
    local.requests.length = 0
    const e = await rejection(fetchImageUrl('http://images.test/loop', opts))
    assert.is(e.code, 'url_fetch_failed')
    assert.is(e.message, 'too many redirects (more than 5)')
    assert.is(local.requests.length, 6)
  } finally {
    await local.close()
  }
})

test('resolves once per hop and connects only to the checked address (no DNS rebinding)', async () => {
  const local = await serve((req, res) => {
    if (req.url === '/again') res.writeHead(302, {location: 'http://rebind.test/img'}).end()
    else res.writeHead(200).end(PNG)
  })
  // First answer public, every later answer loopback.
  const rebinding = (calls: string[]): Resolver => async (hostname) => {
    calls.push(hostname)
    return calls.length === 1 ? [PUBLIC] : ['127.0.0.1']
  }
  try {
    const calls: string[] = []
    const dialled: string[] = []
    const got = await fetchImageUrl('http://rebind.test/img', options({resolve: rebinding(calls), connect: dialTo(local.port, dialled)}))
    assert.ok(got.data.equals(PNG))
    assert.equal(calls, ['rebind.test'])
    assert.equal(dialled, [`${PUBLIC}:80`])

    const calls2: string[] = []
    const dialled2: string[] = []
    const e = await rejection(fetchImageUrl('http://rebind.test/again', options({resolve: rebinding(calls2), connect: dialTo(local.port, dialled2)})))
    assert.is(e.code, 'url_blocked')
    assert.is(e.message, 'the redirect target host rebind.test resolves to 127.0.0.1, a loopback address; only public addresses are fetched')
    assert.equal(calls2, ['rebind.test', 'rebind.test'])
    assert.equal(dialled2, [`${PUBLIC}:80`])
  } finally {
    await local.close()
  }
})

test('refuses private, loopback and other special addresses in every literal form', async () => {
  const urls = [
    'http://0x7f.1/',
    'http://2130706433/',
    'http://0177.0.0.1/',
    'http://127.1/',
    'http://[::ffff:127.0.0.1]/',
    'http://[::1]/',
    'http://169.254.169.254/latest/meta-data',
    'http://[fe80::1]/',
    'http://[fc00::1]/',
    'http://100.64.0.1/',
    'http://0.0.0.0/',
    'http://224.0.0.1/',
    'http://[::]/',
    'http://[::127.0.0.1]/',
    'http://[64:ff9b::7f00:1]/',
    'http://10.0.0.1:8080/',
    'https://192.168.0.1/',
  ]
  const calls: string[] = []
  const dialled: string[] = []
  const opts = options({resolve: resolver({}, calls), connect: dialTo(1, dialled)})
  for (const url of urls) {
    const e = await rejection(fetchImageUrl(url, opts))
    assert.is(e.code, 'url_blocked', url)
    assert.match(e.message, /^the URL .* is .*; only public addresses are fetched$/, url)
  }
  assert.equal(calls, [])
  assert.equal(dialled, [])
})

test('refuses non-http schemes, credentials and bad ports before any lookup', async () => {
  const calls: string[] = []
  const opts = options({resolve: resolver({'images.test': [PUBLIC]}, calls), connect: dialTo(1, [])})
  for (const url of ['file:///etc/passwd', 'gopher://images.test/', 'ftp://images.test/cat.png', 'http://images.test:25/', 'http://u:hunter2@images.test/']) {
    const e = await rejection(fetchImageUrl(url, opts))
    assert.is(e.code, 'url_blocked', url)
    assert.not.match(e.message, 'hunter2')
  }
  assert.equal(calls, [])
})

test('refuses a name that resolves to a private address', async () => {
  const dialled: string[] = []
  const opts = options({
    resolve: resolver({'evil.test': ['10.0.0.5'], 'mixed.test': [PUBLIC, 'fd00::1']}),
    connect: dialTo(1, dialled),
  })
  const e = await rejection(fetchImageUrl('http://evil.test/', opts))
  assert.is(e.code, 'url_blocked')
  assert.is(e.message, 'the URL host evil.test resolves to 10.0.0.5, a private address; only public addresses are fetched')
  assert.is((await rejection(fetchImageUrl('http://mixed.test/', opts))).code, 'url_blocked')
  assert.equal(dialled, [])
})

test('tries the next checked address when a connection is refused', async () => {
  const local = await serve((_req, res) => res.writeHead(200).end(PNG))
  const refused = await serve(() => {})
  await refused.close()
  const dialled: string[] = []
  try {
    const got = await fetchImageUrl('http://images.test/', options({
      resolve: resolver({'images.test': [PUBLIC, PUBLIC_2]}),
      connect: (address, port) => {
        dialled.push(address)
        return {host: '127.0.0.1', port: address === PUBLIC ? refused.port : local.port}
      },
    }))
    assert.ok(got.data.equals(PNG))
    assert.equal(dialled, [PUBLIC, PUBLIC_2])
  } finally {
    await local.close()
  }
})

test('refuses a streamed body over the limit and drops the connection', async () => {
  const local = await serve((_req, res) => {
    res.writeHead(200, {'content-type': 'image/png'})
    const chunk = Buffer.alloc(1024, 7)
    const pump = () => {
      if (!res.destroyed && res.write(chunk)) setImmediate(pump)
      else if (!res.destroyed) res.once('drain', pump)
    }
    pump()
  })
  try {
    const e = await rejection(fetchImageUrl('http://images.test/big.png', options({
      maxBytes: 4096,
      resolve: resolver({'images.test': [PUBLIC]}),
      connect: dialTo(local.port, []),
    })))
    assert.is(e.code, 'payload_too_large')
    assert.is(e.message, 'the file at http://images.test is larger than 4 KiB')
    await within(local.closed, 1000)
  } finally {
    await local.close()
  }
})

test('refuses a declared Content-Length over the limit without reading the body', async () => {
  const local = await serve((_req, res) => {
    res.writeHead(200, {'content-length': String(10 * 1024 * 1024)})
    res.write(Buffer.alloc(16))
  })
  try {
    const started = Date.now()
    const e = await rejection(fetchImageUrl('http://images.test/huge.png', options({
      maxBytes: 4096,
      timeoutMs: 5000,
      resolve: resolver({'images.test': [PUBLIC]}),
      connect: dialTo(local.port, []),
    })))
    assert.is(e.code, 'payload_too_large')
    // The server never ends its 10 MiB body: finishing at all, well inside the 5 s timeout, shows nothing waited for it.
    assert.ok(Date.now() - started < 4000)
    await within(local.closed, 1000)
  } finally {
    await local.close()
  }
})

test('times out a body that drips in slowly', async () => {
  const local = await serve((_req, res) => {
    res.writeHead(200, {'content-type': 'image/png'})
    const timer = setInterval(() => res.write('x'), 200)
    res.on('close', () => clearInterval(timer))
  })
  try {
    const started = Date.now()
    const e = await rejection(fetchImageUrl('http://images.test/slow.png', options({
      timeoutMs: 500,
      resolve: resolver({'images.test': [PUBLIC]}),
      connect: dialTo(local.port, []),
    })))
    assert.is(e.code, 'url_fetch_timeout')
    assert.is(e.message, 'fetching http://images.test took longer than 500 ms')
    assert.ok(Date.now() - started < 4000)
    await within(local.closed, 1000)
  } finally {
    await local.close()
  }
})

test('times out a server that never answers and a resolver that never returns', async () => {
  const local = await serve(() => {})
  try {
    const silent = await rejection(fetchImageUrl('http://images.test/', options({
      timeoutMs: 300,
      resolve: resolver({'images.test': [PUBLIC]}),
      connect: dialTo(local.port, []),
    })))
    assert.is(silent.code, 'url_fetch_timeout')
    const stuck = await rejection(fetchImageUrl('http://images.test/', options({
      timeoutMs: 300,
      resolve: () => new Promise<string[]>(() => {}),
    })))
    assert.is(stuck.code, 'url_fetch_timeout')
  } finally {
    await local.close()
  }
})

test('reports a non-2xx answer as a failed fetch without its body', async () => {
  const local = await serve((_req, res) => res.writeHead(404, {'content-type': 'text/plain'}).end('secret internal details'))
  try {
    const e = await rejection(fetchImageUrl('http://images.test/missing.png', options({
      resolve: resolver({'images.test': [PUBLIC]}),
      connect: dialTo(local.port, []),
    })))
    assert.is(e.code, 'url_fetch_failed')
    assert.is(e.message, 'http://images.test answered HTTP 404')
    assert.equal(e.context, {status: 404})
  } finally {
    await local.close()
  }
})

test('reports a redirect without a Location as a failed fetch', async () => {
  const local = await serve((_req, res) => res.writeHead(302).end())
  try {
    const e = await rejection(fetchImageUrl('http://images.test/', options({
      resolve: resolver({'images.test': [PUBLIC]}),
      connect: dialTo(local.port, []),
    })))
    assert.is(e.code, 'url_fetch_failed')
    assert.is(e.message, 'http://images.test redirected without a Location')
  } finally {
    await local.close()
  }
})

test('reports a refused connection and an unresolvable name as failed fetches', async () => {
  const gone = await serve(() => {})
  await gone.close()
  const refused = await rejection(fetchImageUrl('http://images.test/', options({
    resolve: resolver({'images.test': [PUBLIC]}),
    connect: dialTo(gone.port, []),
  })))
  assert.is(refused.code, 'url_fetch_failed')
  assert.is(refused.message, 'could not fetch http://images.test: connection refused')
  const unknown = await rejection(fetchImageUrl('http://nowhere.test/', options({resolve: resolver({})})))
  assert.is(unknown.code, 'url_fetch_failed')
  assert.is(unknown.message, 'could not resolve nowhere.test')
})

test('refuses a string that is not an absolute URL as a bad request', async () => {
  for (const raw of ['', 'not a url', '/relative/path.png', 'http://']) {
    assert.is((await rejection(fetchImageUrl(raw, options({})))).code, 'bad_request', raw)
  }
})

// Self-signed for images.test; the fetch must refuse it, after sending images.test as the TLS server name.
const TLS_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgpI/0va/ap1dkWVWE
/aCWUkgx3JOHJRJ9IEfVVQCg0XShRANCAARcasubYQ74Vh0Ifua9c64RhRN2d6oD
b63swqDFri7XW2GHlqn/+vPBpTz2ESvOz/Nef5+AuFzIcjjhFoYjRU2b
-----END PRIVATE KEY-----`
const TLS_CERT = `-----BEGIN CERTIFICATE-----
MIIBmzCCAUGgAwIBAgIUb0CD/jVWbtNTCvH5IeBB0/tKCtowCgYIKoZIzj0EAwIw
FjEUMBIGA1UEAwwLaW1hZ2VzLnRlc3QwIBcNMjYxMTIyMDY0MjQwWhgPMjEyNjEw
MjkwNjQyNDBaMBYxFDASBgNVBAMMC2ltYWdlcy50ZXN0MFkwEwYHKoZIzj0CAQYI
KoZIzj0DAQcDQgAEXGrLm2EO+FYdCH7mvXOuEYUTdneqA2+t7MKgxa4u11thh5ap
//rzwaU89hErzs/zXn+fgLhcyHI44RaGI0VNm6NrMGkwHQYDVR0OBBYEFJvV8lC5
M+w9TJsxfUsXRSFZnMuGMB8GA1UdIwQYMBaAFJvV8lC5M+w9TJsxfUsXRSFZnMuG
MA8GA1UdEwEB/wQFMAMBAf8wFgYDVR0RBA8wDYILaW1hZ2VzLnRlc3QwCgYIKoZI
zj0EAwIDSAAwRQIhANtRtS8xpkdMSdPLTR3SWCE5LiSIcPMY7xPTXaHoxh09AiAd
QwdsxJdmxTaKGkApCOs0eF2AtYrV6CjVDJj2xSm/Iw==
-----END CERTIFICATE-----`

test('keeps the URL hostname as the TLS server name and verifies the certificate', async () => {
  const names: string[] = []
  const context = createSecureContext({key: TLS_KEY, cert: TLS_CERT})
  const server = createTlsServer({
    SNICallback: (name, done) => {
      names.push(name)
      done(null, context)
    },
  })
  server.on('tlsClientError', () => {})
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const dialled: string[] = []
  try {
    const e = await rejection(fetchImageUrl('https://images.test/cat.png', options({
      resolve: resolver({'images.test': [PUBLIC]}),
      connect: dialTo((server.address() as AddressInfo).port, dialled),
    })))
    assert.is(e.code, 'url_fetch_failed')
    assert.is(e.message, 'could not fetch https://images.test: its TLS certificate was not accepted')
    assert.equal(names, ['images.test'])
    assert.equal(dialled, [`${PUBLIC}:443`])
  } finally {
    await stop(server)
  }
})

test.run()

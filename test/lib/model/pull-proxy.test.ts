import {createServer, request as httpRequest, type Server} from 'node:http'
import {connect, type AddressInfo} from 'node:net'
import {mkdtemp, readFile, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {writeToyModel} from '../../../scripts/fixtures.js'
import type {Manifest} from '../../../src/lib/model/manifest-types.js'
import {isModError} from '../../../src/lib/errors.js'
import {pullModel} from '../../../src/lib/model/pull.js'

const root = await mkdtemp(join(tmpdir(), 'mod-pull-proxy-'))
const toy = await writeToyModel(join(root, 'source'))
const bodies = new Map<string, Buffer>()
for (const f of toy.files) bodies.set(`/${f.path}`, await readFile(join(root, 'source', f.path)))

const origin: Server = createServer((req, res) => {
  const body = bodies.get(req.url ?? '')
  if (!body) return void res.writeHead(404).end()
  res.writeHead(200, {'content-length': body.length}).end(body)
})

/** A forward proxy recording what it relays: tunnels (CONNECT host:port, undici's default) and absolute-form requests. */
const relayed: string[] = []
const proxy: Server = createServer((req, res) => {
  relayed.push(req.url ?? '')
  const target = new URL(req.url ?? '')
  const upstream = httpRequest({host: target.hostname, port: target.port, path: target.pathname, method: req.method, headers: req.headers}, (up) => {
    res.writeHead(up.statusCode ?? 502, up.headers)
    up.pipe(res)
  })
  upstream.on('error', () => res.writeHead(502).end())
  req.pipe(upstream)
})
proxy.on('connect', (req, client, head) => {
  relayed.push(req.url ?? '')
  const [host, port] = (req.url ?? '').split(':')
  const upstream = connect(Number(port), host, () => {
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n')
    upstream.write(head)
    upstream.pipe(client)
    client.pipe(upstream)
  })
  upstream.on('error', () => client.destroy())
  client.on('error', () => upstream.destroy())
})

const listen = (s: Server) => new Promise<string>((resolve) => s.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(s.address() as AddressInfo).port}`)))
const base = await listen(origin)
const proxyUrl = await listen(proxy)

const manifest: Manifest = {...toy, files: toy.files.map((f) => ({path: f.path, role: f.role, url: `${base}/${f.path}`, size: f.size, sha256: f.sha256}))}

test.after(async () => {
  origin.closeAllConnections()
  proxy.closeAllConnections()
  origin.close()
  proxy.close()
  await rm(root, {recursive: true, force: true})
})

test('with a proxy set, every file is fetched through it', async () => {
  relayed.length = 0
  await pullModel(manifest, join(root, 'via-proxy'), {proxy: {httpProxy: proxyUrl}})
  // One tunnel to the origin, kept alive for every file.
  assert.ok(relayed.length >= 1)
  assert.ok(relayed.every((r) => r === base.slice('http://'.length)), relayed.join(' '))
})

test('a host in noProxy is reached directly', async () => {
  relayed.length = 0
  await pullModel(manifest, join(root, 'direct'), {proxy: {httpProxy: proxyUrl, noProxy: '127.0.0.1'}})
  assert.equal(relayed, [])
})

test('without proxy settings the pull never reads the proxy variables itself', async () => {
  relayed.length = 0
  const saved = process.env.HTTP_PROXY
  process.env.HTTP_PROXY = proxyUrl
  try {
    await pullModel(manifest, join(root, 'no-settings'), {proxy: {}})
  } finally {
    if (saved === undefined) delete process.env.HTTP_PROXY
    else process.env.HTTP_PROXY = saved
  }
  assert.equal(relayed, [])
})

test('a proxy that is not a URL is invalid_config naming its variable, before anything is fetched', async () => {
  relayed.length = 0
  const e = await pullModel(manifest, join(root, 'bad-proxy'), {proxy: {httpsProxy: '127.0.0.1:3128'}}).catch((x: unknown) => x)
  assert.ok(isModError(e) && e.code === 'invalid_config', String(e))
  assert.is((e as Error).message, 'HTTPS_PROXY (or https_proxy)="127.0.0.1:3128" is not valid: expected a proxy URL such as http://proxy.example:3128')
  assert.equal(relayed, [])
})

test.run()

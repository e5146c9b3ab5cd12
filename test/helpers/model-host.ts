/**
 * The download hosts of the shipped manifests (github.com, huggingface.co), played on 127.0.0.1 for a `mod models pull`
 * run as a child process: a proxy (HTTPS_PROXY) that answers every CONNECT itself and speaks TLS inside the tunnel
 * with test/fixtures/tls/hosts-cert.pem, a self-signed certificate for those two names (valid until 2126, made with
 * `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 36500 -subj /CN=github.com
 * -addext subjectAltName=DNS:github.com,DNS:huggingface.co`), which the child trusts through NODE_EXTRA_CA_CERTS.
 * Nothing leaves the machine: the proxy never opens a connection of its own.
 */
import {readFileSync} from 'node:fs'
import {createServer, type IncomingMessage, type ServerResponse} from 'node:http'
import type {AddressInfo, Socket} from 'node:net'
import {join} from 'node:path'
import {createSecureContext, TLSSocket} from 'node:tls'

import {ROOT} from './cli.js'
import {onlyThroughProxy} from './proxy-env.js'

const TLS = join(ROOT, 'test', 'fixtures', 'tls')
const CERT = join(TLS, 'hosts-cert.pem')

export interface ModelHost {
  /** Variables for the child: the proxy, and the certificate to trust. */
  env: Record<string, string>
  /** Every request served, in order: its path and Range header. */
  requests: {path: string; range?: string}[]
  close: () => Promise<void>
}

export async function modelHost(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<ModelHost> {
  const requests: ModelHost['requests'] = []
  const sockets = new Set<Socket>()
  const inner = createServer((req, res) => {
    requests.push({path: req.url ?? '', range: req.headers.range})
    handler(req, res)
  })
  const context = createSecureContext({key: readFileSync(join(TLS, 'hosts-key.pem')), cert: readFileSync(CERT)})
  const proxy = createServer((_req, res) => res.writeHead(405).end())
  proxy.on('connect', (_req, socket: Socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => undefined)
    socket.write('HTTP/1.1 200 Connection Established\r\n\r\n', () => {
      const tls = new TLSSocket(socket, {isServer: true, secureContext: context})
      tls.on('error', () => undefined)
      inner.emit('connection', tls)
    })
  })
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
  return {
    env: {...onlyThroughProxy(url), NODE_EXTRA_CA_CERTS: CERT},
    requests,
    close: async () => {
      for (const s of sockets) s.destroy()
      inner.closeAllConnections()
      await new Promise((resolve) => proxy.close(resolve))
    },
  }
}

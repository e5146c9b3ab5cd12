/**
 * Run as a child process by offline.test.ts: closes every way out to the network (each attempt is recorded, then
 * refused), then opens a code reader and reads a generated QR code, and prints as JSON what it read, the network
 * attempts, and the SHA-256 of every WebAssembly binary compiled.
 */
import {createHash} from 'node:crypto'
import dns from 'node:dns'
import http from 'node:http'
import https from 'node:https'
import {syncBuiltinESMExports} from 'node:module'
import net from 'node:net'
import tls from 'node:tls'

const attempts: string[] = []
function refuse(what: string): () => never {
  return () => {
    attempts.push(what)
    throw new Error(`no network here: ${what}`)
  }
}
globalThis.fetch = refuse('fetch')
http.request = http.get = refuse('http')
https.request = https.get = refuse('https')
net.connect = net.createConnection = refuse('net.connect')
net.Socket.prototype.connect = refuse('socket')
tls.connect = refuse('tls')
dns.lookup = refuse('dns') as unknown as typeof dns.lookup
WebAssembly.instantiateStreaming = refuse('WebAssembly.instantiateStreaming')
WebAssembly.compileStreaming = refuse('WebAssembly.compileStreaming')
syncBuiltinESMExports()

const compiled: string[] = []
const record = (source: unknown) => {
  if (ArrayBuffer.isView(source) || source instanceof ArrayBuffer) {
    const bytes = ArrayBuffer.isView(source) ? new Uint8Array(source.buffer, source.byteOffset, source.byteLength) : new Uint8Array(source)
    compiled.push(createHash('sha256').update(bytes).digest('hex'))
  }
}
const {compile, instantiate} = WebAssembly
WebAssembly.compile = (source) => {
  record(source)
  return compile(source)
}
WebAssembly.instantiate = ((source: BufferSource | WebAssembly.Module, imports?: WebAssembly.Imports) => {
  record(source)
  return instantiate(source as BufferSource, imports)
}) as typeof WebAssembly.instantiate

const {openCodeReader} = await import('../../../../src/lib/signals/codes/read.js')
const {drawCode, printOnPhoto} = await import('./draw.js')

const {image} = await printOnPhoto('coffee.jpg', 400, 300, [{code: await drawCode('QRCode', 'offline', 4), left: 100, top: 40}])
const reader = await openCodeReader()
const codes = reader.read(image)
await reader.close()
process.stdout.write(JSON.stringify({codes, attempts, compiled}))

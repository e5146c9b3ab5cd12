// mod scan --server against a hostile server on 127.0.0.1 (plain node:http and raw sockets, no model): answers that
// are huge, endless, trickling or late, a Retry-After of days, verdicts that are not verdicts, and text that tries to
// become a GitHub workflow command. Each one ends the run within a bound, exit 2, with a clear error; none is SAFE.
import {createHash} from 'node:crypto'
import {appendFileSync, mkdirSync, readFileSync, writeFileSync} from 'node:fs'
import {createServer, type IncomingMessage, type Server, type ServerResponse} from 'node:http'
import {createServer as createTcpServer, type AddressInfo, type Socket} from 'node:net'
import {createServer as createHttpsServer} from 'node:https'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {createClient} from '../../src/cli/remote/client.js'
import {runInProcess, solidPng, tempDir} from '../helpers/cli.js'

const TLS = join(import.meta.dirname, '..', 'fixtures', 'tls')
const dir = tempDir('mod-hostile-')
const work = join(dir.path, 'work')
const closers: (() => void)[] = []

const category = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  parent: null,
  threshold: 0.5,
  origin: 'custom',
  signals: ['clip'],
  evaluated: true,
  evaluated_by: ['clip'],
  prompts: ['red'],
  negatives: [],
  ...extra,
})
const LISTING = {preset: 'fast', model: 'toy-clip', coverage: {evaluated: 1, total: 1, not_evaluated: []}, categories: [category('redness')]}
const HEALTH = {status: 'ok', version: '0.2.0', policy: {sha256: 'c'.repeat(64)}, limits: {max_batch: 16, max_bytes: 1_000_000, max_batch_bytes: 10_000_000}}
const safe = (source: string) => ({source, is_safe: true, violations: [], labels: [{name: 'redness', score: 0.1, threshold: 0.5, parent: null, violated: false, origin: 'custom'}], not_evaluated: []})
const unsafe = (source: string) => ({
  source,
  is_safe: false,
  violations: [{name: 'redness', confidence: 0.9, parent: null, threshold: 0.5}],
  labels: [{name: 'redness', score: 0.9, threshold: 0.5, parent: null, violated: true, origin: 'custom'}],
  not_evaluated: [],
})

/** Answers a request; a batch's handler also gets the request's body. */
type Handler = (req: IncomingMessage, res: ServerResponse, body?: Buffer) => void

function json(res: ServerResponse, body: unknown, status = 200, headers: Record<string, string> = {}): void {
  res.writeHead(status, {'content-type': 'application/json', ...headers}).end(JSON.stringify(body))
}

/** A server that answers /v1/categories and /health as a mod serve does, and the batch as `batch` says. */
async function hostile(batch: Handler, overrides: {categories?: Handler; health?: Handler} = {}): Promise<string> {
  const server: Server = createServer((req, res) => {
    if (req.url === '/v1/categories') return (overrides.categories ?? ((_, r) => json(r, LISTING)))(req, res)
    if (req.url === '/health') return (overrides.health ?? ((_, r) => json(r, HEALTH)))(req, res)
    // The upload is read first, as a server does, so that the answer is what the client waits on.
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => batch(req, res, Buffer.concat(chunks)))
  })
  server.on('clientError', (_e, socket) => socket.destroy())
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  closers.push(() => {
    server.closeAllConnections()
    server.close()
  })
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** A server that writes `raw` bytes as its whole answer to the batch request (anything HTTP allows, or not). */
async function rawServer(raw: string): Promise<string> {
  const server = createTcpServer((socket: Socket) => {
    let seen = ''
    socket.on('data', (d: Buffer) => {
      seen += d.toString('latin1')
      const head = /^GET (\S+)/.exec(seen)
      if (head && seen.includes('\r\n\r\n')) {
        const body = JSON.stringify(head[1] === '/health' ? HEALTH : LISTING)
        socket.write(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`)
        seen = ''
      } else if (seen.startsWith('POST') && seen.includes('--\r\n')) {
        socket.end(raw)
      }
    })
    socket.on('error', () => undefined)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  closers.push(() => server.close())
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

const scan = (url: string, args: string[] = []) =>
  runInProcess(['scan', 'photos', '--server', url, ...(args.includes('--retries') ? [] : ['--retries', '0']), ...args], {cwd: work})

async function timed<T>(run: () => Promise<T>): Promise<{value: T; ms: number}> {
  const t0 = Date.now()
  const value = await run()
  return {value, ms: Date.now() - t0}
}

/**
 * The workflow commands GitHub Actions would run from a step's output: it reads each line that starts with `::`
 * (after optional white space), and the older `##[command]` form, as a command.
 */
function workflowCommands(output: string): string[] {
  return output.split(/\r\n|\r|\n/).filter((l) => /^\s*(::|##\[)/.test(l))
}

test.before(async () => {
  mkdirSync(join(work, 'photos'), {recursive: true})
  writeFileSync(join(work, 'photos', 'a.png'), await solidPng(255, 0, 0, 8, 8))
  writeFileSync(join(work, 'photos', 'b.png'), await solidPng(0, 0, 255, 8, 8))
})

test.after(() => {
  for (const close of closers) close()
  dir.remove()
})

/** A 200 JSON answer whose body never ends: spaces as fast as the client reads them. */
function endlessJson(res: ServerResponse): void {
  res.writeHead(200, {'content-type': 'application/json'})
  const chunk = Buffer.alloc(64 * 1024, 0x20)
  const pump = (): void => {
    while (!res.destroyed && res.write(chunk));
    if (!res.destroyed) res.once('drain', pump)
  }
  pump()
}

test('a server learns each file\'s base name only, never the folders it sits in', async () => {
  let names: string[] = []
  const url = await hostile((_req, res, body) => {
    names = [...(body ?? Buffer.alloc(0)).toString('latin1').matchAll(/filename="([^"]*)"/g)].map((m) => m[1])
    json(res, {results: names.map((n) => safe(n))})
  })
  const r = await runInProcess(['scan', join(work, 'photos', 'a.png'), 'photos/b.png', '--server', url], {cwd: work})
  assert.is(r.code, 0, r.stderr)
  assert.equal(names, ['a.png', 'b.png'])
  // The results still carry the paths as given, as a local scan's do.
  assert.match(r.stdout, `SAFE    ${join(work, 'photos', 'a.png')}`)
  assert.match(r.stdout, 'SAFE    photos/b.png')
})

test('a redirect, a proxy\'s 403 or its 413 says what to look at; none is followed or called an internal error', async () => {
  const redirecting = await hostile(() => {}, {categories: (_req, res) => res.writeHead(302, {location: 'https://mod.example.com/'}).end()})
  const moved = await scan(redirecting)
  assert.is(moved.code, 2)
  assert.is(moved.stderr, `mod: invalid_config: the server ${redirecting}/ answered 302, a redirect to https://mod.example.com/: mod does not follow redirects (its API key would go along); give --server the address of the mod serve itself\n`)
  const proxied = await hostile(() => {}, {categories: (_req, res) => res.writeHead(403, {'content-type': 'text/html'}).end('<h1>Forbidden</h1>')})
  const forbidden = await scan(proxied)
  assert.is(forbidden.code, 2)
  assert.is(forbidden.stderr, `mod: unauthorized: the server ${proxied}/ answered 403: HTTP 403 (a proxy in front of it may refuse this client)\n`)
  // nginx's page for a body over its client_max_body_size (1 MiB unless set), below a batch's size.
  const limited = await hostile((_req, res) => res.writeHead(413, {'content-type': 'text/html'}).end('<html><h1>413 Request Entity Too Large</h1><hr>nginx</html>'))
  const large = await scan(limited)
  assert.is(large.code, 2)
  assert.is(
    large.stderr.split('\n').at(-2),
    `mod: payload_too_large: the server ${limited}/ answered 413: HTTP 413 (a proxy in front of it takes smaller request bodies than mod serve: raise its limit, e.g. nginx's client_max_body_size, 1 MiB unless set)`,
  )
})

test('TLS that fails says why, in words, at once: a self-signed certificate (and how to trust it), plain HTTP on an https:// port', async () => {
  // test/fixtures/tls: a self-signed certificate for 127.0.0.1 valid until 2126, made for these tests with
  // `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 36500 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1`.
  const tls = createHttpsServer({key: readFileSync(join(TLS, 'key.pem')), cert: readFileSync(join(TLS, 'cert.pem'))}, (_req, res) => json(res, LISTING))
  await new Promise<void>((resolve) => tls.listen(0, '127.0.0.1', resolve))
  closers.push(() => tls.close())
  const selfSigned = `https://127.0.0.1:${(tls.address() as AddressInfo).port}`
  const untrusted = await scan(selfSigned, ['--retries', '3'])
  assert.is(untrusted.code, 2)
  assert.is(untrusted.stderr, `mod: server_unreachable: the TLS connection to ${selfSigned}/ failed: its certificate is self-signed: to trust it, give its authority to Node.js with NODE_EXTRA_CA_CERTS=ca.pem\n`)
  // A plain node:http server answers the TLS hello with its own 400, as HTTP servers do.
  const http = createServer((_req, res) => json(res, LISTING))
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
  closers.push(() => http.close())
  const plain = `https://127.0.0.1:${(http.address() as AddressInfo).port}`
  const notTls = await scan(plain)
  assert.is(notTls.code, 2)
  assert.is(notTls.stderr, `mod: server_unreachable: the TLS connection to ${plain}/ failed: the server does not speak TLS on that port (is it http://, not https://?)\n`)
})

test('a huge or endless answer is cut off at the size a batch can hold, however fast it comes', async () => {
  const claimed = await hostile((_req, res) => res.writeHead(200, {'content-type': 'application/json', 'content-length': String(3_000_000_000)}).write('{"results":['))
  const endless = await hostile((_req, res) => endlessJson(res))
  const listing = await hostile(() => undefined, {categories: (_req, res) => endlessJson(res)})
  for (const [url, what, limit] of [
    [claimed, 'POST /v1/moderate/batch', '2 MiB'],
    [endless, 'POST /v1/moderate/batch', '2 MiB'],
    [listing, 'GET /v1/categories', '8 MiB'],
  ]) {
    const before = process.memoryUsage().rss
    const {value: r, ms} = await timed(() => scan(url))
    assert.is(r.code, 2, r.stderr)
    assert.ok(r.stderr.includes(`mod: bad_server_answer: the server ${url}/ answered ${what} with a body larger than the`), r.stderr)
    assert.ok(r.stderr.includes(limit), r.stderr)
    assert.ok(ms < 5000, `${what}: ${ms} ms`)
    assert.ok(process.memoryUsage().rss - before < 200 * 1024 * 1024, 'the body was not held')
  }
})

test('a trickling body, headers that never come and a Retry-After of days end at --timeout, or at once', async () => {
  const trickle = await hostile((_req, res) => {
    res.writeHead(200, {'content-type': 'application/json'})
    const timer = setInterval(() => (res.destroyed ? clearInterval(timer) : res.write(' ')), 200)
  })
  const silent = await hostile(() => undefined)
  for (const url of [trickle, silent]) {
    const {value: r, ms} = await timed(() => scan(url, ['--timeout', '1', '--retries', '8']))
    assert.is(r.code, 2, r.stderr)
    assert.ok(/\nmod: server_unreachable: the run was stopped after 1 s \(--timeout\) waiting for the server http:\/\/127\.0\.0\.1:\d+\/\n$/.test(r.stderr), r.stderr)
    assert.ok(ms >= 950 && ms < 2500, `${ms} ms`)
  }
  let refusals = 0
  const later = await hostile((_req, res) => {
    refusals++
    json(res, {error: {code: 'overloaded', message: 'busy'}}, 503, {'retry-after': '999999'})
  })
  const {value: r, ms} = await timed(() => scan(later, ['--timeout', '30', '--retries', '8']))
  assert.is(r.code, 2, r.stderr)
  assert.match(r.stderr, /mod: server_unreachable: POST \/v1\/moderate\/batch to \S+ failed with 503 overloaded, and the next try \(in 60 s\) would come after the run's --timeout of 30 s\n$/)
  assert.is(refusals, 1)
  assert.ok(ms < 2000, `${ms} ms`)
})

test("each request has its own limits: headers and the body's pauses (retried), the body's whole time (final)", async () => {
  const trickle = await hostile((_req, res) => {
    res.writeHead(200, {'content-type': 'application/json'})
    const timer = setInterval(() => (res.destroyed ? clearInterval(timer) : res.write(' ')), 50)
  })
  const stalled = await hostile((_req, res) => res.writeHead(200, {'content-type': 'application/json'}).write('{'))
  const silent = await hostile(() => undefined)
  const timeouts = {headersMs: 400, bodyMs: 600, idleMs: 300}
  const slow = "GET /v1/moderate/batch to \\S+: the answer's body was not whole 0\\.6 s after its headers: a server or proxy sends it too slowly"
  const retried = (last: string) => `GET /v1/moderate/batch to \\S+ failed 2 times, last with ${last}`
  for (const [url, message] of [
    [trickle, slow],
    // undici's own pause limit, or the whole body's, whichever its timers see first.
    [stalled, `(${retried('UND_ERR_BODY_TIMEOUT')}|${slow})`],
    [silent, retried('UND_ERR_HEADERS_TIMEOUT')],
  ]) {
    const client = createClient({server: url, attempts: 2, timeouts})
    const t0 = Date.now()
    try {
      await client.getJson('v1/moderate/batch', 1024).then(() => assert.unreachable())
    } catch (e) {
      assert.ok(new RegExp(`^${message}`).test((e as Error).message), (e as Error).message)
    }
    const ms = Date.now() - t0
    assert.ok(ms < 3500, `${message}: ${ms} ms`)
    await client.close()
  }
})

test('an answer that is not a well-formed verdict is an error (exit 2), never SAFE', async () => {
  const answers: [unknown, RegExp][] = [
    [{results: [{...unsafe('a.png'), is_safe: 'false'}, safe('b.png')]}, /results\[0\]: \/is_safe must be boolean/],
    [{results: [{...safe('a.png'), violations: unsafe('a.png').violations}, safe('b.png')]}, /a result whose is_safe contradicts its violations \(results\[0\]\)/],
    [{results: [{}, safe('b.png')]}, /results\[0\]: the answer must have required property 'source'/],
    [{results: [null, safe('b.png')]}, /results\[0\]: the answer must be object/],
    [{results: [{source: 'a.png', is_safe: true}, safe('b.png')]}, /results\[0\]: the answer must have required property 'violations'/],
    [{results: [{...safe('a.png'), labels: [{...safe('a.png').labels[0], score: 7}]}, safe('b.png')]}, /results\[0\]: \/labels\/0\/score must be <= 1/],
    [{results: [safe('a.png')]}, /1 results for 2 files/],
    [{}, /no results list/],
    [null, /no results list/],
  ]
  for (const [answer, why] of answers) {
    const url = await hostile((_req, res) => json(res, answer))
    const r = await scan(url, ['--json'])
    assert.is(r.code, 2, `${JSON.stringify(answer)}: ${r.stderr}`)
    assert.match(r.stderr, /mod: bad_server_answer: the server \S+ answered POST \/v1\/moderate\/batch with /)
    assert.match(r.stderr, why)
    assert.equal(JSON.parse(r.stdout), [], 'no verdict was printed')
  }
  const badHealth = await hostile(() => undefined, {health: (_req, res) => json(res, {version: 'x\n::error::y'})})
  const h = await scan(badHealth)
  assert.is(h.code, 2)
  assert.match(h.stderr, /^mod: bad_server_answer: the server \S+ answered GET \/health with an answer that is not valid \(\/version must match pattern/)
})

/** Text a hostile server or proxy puts in front of a step's log, one workflow command per line. */
const INJECTED = '\n::error file=README.md::pwned\n::add-mask::hunter2\n  ::stop-commands::token\r::warning::cr\u2028::notice::ls\n##[error]legacy\n%0A::error::encoded'

test('server text reaches no output as a workflow command: messages, codes, entries, names and headers', async () => {
  const urls = {
    refusal: await hostile((_req, res) => json(res, {error: {code: 'bad_request', message: `nope${INJECTED}`}}, 400)),
    retried: await hostile((_req, res) => json(res, {error: {code: `overloaded${INJECTED}`, message: INJECTED}}, 503)),
    entry: await hostile((_req, res) =>
      json(res, {results: [{source: 'a.png', error: {code: 'unsupported_media', message: `cannot read${INJECTED}`}}, unsafe('b.png')]}),
    ),
    names: await hostile(() => undefined, {categories: (_req, res) => json(res, {...LISTING, categories: [category(`redness${INJECTED}`)]})}),
    reason: await hostile((_req, res) => json(res, {results: [safe('a.png'), safe('b.png')]}), {
      categories: (_req, res) => json(res, {...LISTING, categories: [category('redness', {evaluated: false, evaluated_by: [], reason: `needs${INJECTED}`})]}),
    }),
    model: await hostile((_req, res) => json(res, {results: [safe('a.png'), safe('b.png')]}), {categories: (_req, res) => json(res, {...LISTING, model: `toy${INJECTED}`})}),
    header: await rawServer(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n::add-mask::hunter2\r\n::error file=README.md::pwned\r\n\r\n{}`),
    status: await rawServer(`HTTP/1.1 503 ::error file=README.md::pwned\r\nretry-after: 0\r\n::add-mask::x: y\r\ncontent-length: 2\r\n\r\n{}`),
  }
  for (const [what, url] of Object.entries(urls)) {
    // The text formats (JSON and SARIF escape control characters by their nature).
    for (const format of ['table', 'github', 'junit']) {
      const r = await scan(url, ['--format', format, '--retries', '1'])
      // Text where it is only shown (a reason, a model id) leaves the verdicts as they are; anywhere else it is an error.
      assert.is(r.code, what === 'reason' || what === 'model' ? 0 : what === 'entry' ? 1 : 2, `${what} ${format}: ${r.stderr}`)
      if (what !== 'reason' && what !== 'model' && what !== 'entry') assert.match(r.stderr, /(^|\n)mod: (bad_request|server_unreachable|bad_server_answer): /, `${what} ${format}`)
      const commands = [...workflowCommands(r.stderr), ...workflowCommands(r.stdout)]
      // In --format github, mod's own annotations: one per flagged or failed file, and the summary.
      const own = commands.filter((c) => /^::error file=photos\/[ab]\.png,line=1,title=mod%3A [^:]*::[^\r\n]*$|^::notice title=mod scan::/.test(c))
      assert.equal(commands.slice(own.length), [], `${what} ${format}:\n${r.stderr}\n${r.stdout}`)
      if (format !== 'github') assert.is(own.length, 0, `${what} ${format}`)
      assert.not.ok(/hunter2/.test(r.stdout + r.stderr) && /^\s*::add-mask::/m.test(r.stdout + r.stderr), `${what} ${format}`)
    }
  }
  // What the person reading sees: the text, escaped, on the error's own line.
  const r = await scan(urls.refusal)
  assert.is(
    r.stderr.split('\n').at(-2),
    `mod: bad_request: the server ${urls.refusal}/ answered 400: nope\\x0a::error file=README.md::pwned\\x0a::add-mask::hunter2\\x0a  ::stop-commands::token\\x0d::warning::cr\\u2028::notice::ls\\x0a##[error]legacy\\x0a%0A::error::encoded`,
  )
  const header = await scan(urls.header)
  assert.match(header.stderr, /\nmod: bad_server_answer: the server \S+ answered POST \/v1\/moderate\/batch with an answer that is not HTTP\/1\.1 \(/)
  const entry = await scan(urls.entry, ['--format', 'github'])
  assert.ok(entry.stdout.includes('::error file=photos/a.png,line=1,title=mod%3A could not scan (unsupported_media)::cannot read\\x0a::error file=README.md::pwned'), entry.stdout)
})

test('--resume: a forged, edited or foreign journal fails the run (exit 2), never passes a flagged image; no key, no journal', async () => {
  const url = await hostile((_req, res) => json(res, {results: [unsafe('a.png'), safe('b.png')]}))
  const journal = join(dir.path, 'journal.ndjson')
  const run = (env: Record<string, string>) => runInProcess(['scan', 'photos', '--server', url, '--resume', journal, '--format', 'github'], {cwd: work, env})
  const honest = await run({MOD_API_KEY: 'team-key'})
  assert.is(honest.code, 1, honest.stderr)
  const written = readFileSync(journal, 'utf8')
  assert.is(written.trim().split('\n').length, 3)
  const again = await run({MOD_API_KEY: 'team-key'})
  assert.is(again.code, 1, 'replayed from the journal: the same verdicts')
  assert.match(again.stderr, /mod: resume: 2 inputs already scored/)
  // The attack: a line for the flagged file's bytes saying it is safe, after the honest ones or in their place.
  const sha256 = createHash('sha256').update(readFileSync(join(work, 'photos', 'a.png'))).digest('hex')
  appendFileSync(journal, `${JSON.stringify({sha256, result: safe('photos/a.png'), hmac: 'f'.repeat(64)})}\n`)
  const forged = await run({MOD_API_KEY: 'team-key'})
  assert.is(forged.code, 2)
  assert.match(forged.stderr, /\nmod: invalid_config: --resume \S+journal\.ndjson line 4 was not written by mod under this key \(edited, or added by someone else\): its verdict cannot be trusted; remove the journal to start over\n$/)
  assert.not.match(forged.stdout, /::notice title=mod scan::2 scanned: 1 safe/)
  writeFileSync(journal, written.replace('"is_safe":false', '"is_safe":true').replace(/"violations":\[\{[^\]]*\}\]/, '"violations":[]'))
  const edited = await run({MOD_API_KEY: 'team-key'})
  assert.is(edited.code, 2)
  assert.match(edited.stderr, /line 2 was not written by mod under this key/)
  writeFileSync(journal, written)
  const foreign = await run({MOD_API_KEY: 'team-key', MOD_JOURNAL_KEY: 'another-secret'})
  assert.is(foreign.code, 2)
  assert.match(foreign.stderr, /was signed under another key \(MOD_JOURNAL_KEY, or the API key when that is unset\)/)
  const keyless = await run({})
  assert.is(keyless.code, 2)
  assert.match(keyless.stderr, /^mod: invalid_config: --resume signs its journal with a secret the scanned files cannot know: set MOD_JOURNAL_KEY \(or give the API key the server wants\)\n$/)
})

test.run()

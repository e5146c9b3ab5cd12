// mod scan --server against real mod serve processes (the toy model, the redness policy): the same outputs and exit
// codes as a local scan, a fleet behind a balancer surviving a server killed mid-run, 503 with Retry-After, a run
// that cannot reach its server failing clearly and resuming from its journal, a wrong key.
import {spawn} from 'node:child_process'
import {mkdirSync, readFileSync, writeFileSync} from 'node:fs'
import {createServer as createHttpServer, request as httpRequest, type IncomingMessage, type Server} from 'node:http'
import {createConnection, createServer as createTcpServer, type AddressInfo, type Socket} from 'node:net'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {BIN, runCli, runInProcess, solidPng, tempDir, TOY_MODEL, writeRednessPolicy} from '../helpers/cli.js'
import {colourClip} from '../lib/video/helpers.js'
import {serveProcess, type ServeProcess} from '../server/harness.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const KEY = 'remote-test-key'
const dir = tempDir()
const work = join(dir.path, 'work')
const policy = join(work, 'policy.yaml')
const local = {MOD_MODEL_DIR: TOY_MODEL, MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache'))}
const servers: ServeProcess[] = []
const closers: (() => void)[] = []
let base = ''
let basePort = 0
/** A second server, for the balancer (started with the first one: a start takes seconds). */
let standby: Promise<{process: ServeProcess; url: string; port: number}>

/** A mod serve of the toy model under the redness policy, batches of 3 (so that a folder takes several requests). */
async function serve(): Promise<{process: ServeProcess; url: string; port: number}> {
  // Killed at the end: what it keeps in TMPDIR goes with the test's folder.
  const p = serveProcess(['--port', '0'], {...local, MOD_CONFIG: policy, MOD_API_KEY: KEY, MOD_MAX_BATCH: '3', TMPDIR: dir.path})
  servers.push(p)
  const [, url] = await p.waitFor(/^listening on (http:\/\/127\.0\.0\.1:\d+)$/)
  return {process: p, url, port: Number(new URL(url).port)}
}

async function listen(server: Server | ReturnType<typeof createTcpServer>): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  closers.push(() => server.close())
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/**
 * An HTTP proxy to `target` that lets `answer` reply to a request itself (returning true) before it is forwarded:
 * a server answering 503, or one that stops answering. `alter` may change the headers of a forwarded answer.
 */
function proxy(
  target: string,
  answer: (req: IncomingMessage, res: import('node:http').ServerResponse) => boolean,
  alter: (req: IncomingMessage, headers: IncomingMessage['headers']) => void = () => {},
): Server {
  const {port} = new URL(target)
  return createHttpServer((req, res) => {
    if (answer(req, res)) return
    // A request to a forward proxy names the whole URL; the server wants the path.
    const {pathname, search} = new URL(req.url ?? '/', 'http://proxy')
    const forward = httpRequest({host: '127.0.0.1', port, method: req.method, path: pathname + search, headers: req.headers}, (up) => {
      alter(req, up.headers)
      res.writeHead(up.statusCode ?? 502, up.headers)
      up.pipe(res)
    })
    forward.on('error', () => res.destroy())
    req.pipe(forward)
  })
}

// In this process (one at a time); the Ctrl-C tests below run real processes.
const scan = (args: string[], env: Record<string, string> = {}) => runInProcess(['scan', ...args], {cwd: work, env})
const remote = (args: string[], server = base) => scan([...args, '--server', server], {MOD_API_KEY: KEY})

/** What a local scan of the same inputs prints, run once per argument list. */
const locals = new Map<string, Promise<{code: number; stdout: string}>>()
function localScan(args: string[]): Promise<{code: number; stdout: string}> {
  const key = args.join('\0')
  if (!locals.has(key)) locals.set(key, scan([...args, '--config', policy], local))
  return locals.get(key) as Promise<{code: number; stdout: string}>
}

test.before(async () => {
  mkdirSync(join(work, 'photos'), {recursive: true})
  writeRednessPolicy(work)
  for (let i = 0; i < 10; i++) writeFileSync(join(work, 'photos', `p${i}.png`), await solidPng(i % 3 === 0 ? 255 : 0, 0, i % 3 === 0 ? 0 : 255, 16, 16))
  writeFileSync(join(work, 'empty.png'), '')
  writeFileSync(join(work, 'notes.png'), 'not an image')
  writeFileSync(join(work, 'notes.mp4'), 'not a video either')
  await colourClip(join(work, 'clip.mp4'), ['blue', 'red', 'blue'], 2, {size: '32x32', rate: 2})
  standby = serve()
  // Awaited by the balancer's test; a failed start is that test's failure, not an unhandled rejection.
  standby.catch(() => undefined)
  ;({url: base, port: basePort} = await serve())
})

test.after(() => {
  for (const s of servers) s.child.kill('SIGKILL')
  for (const close of closers) close()
  dir.remove()
})

test('--json, --format sarif and the table print what a local scan prints, with the same exit code; error entries too', async () => {
  for (const format of [['--json'], ['--format', 'sarif'], []]) {
    const args = ['photos', 'empty.png', 'notes.png', 'missing.png', ...format]
    const l = await localScan(args)
    const r = await remote(args)
    assert.is(r.stdout, l.stdout, format.join(' '))
    assert.is(r.code, l.code, format.join(' '))
  }
  const r = await scan(['photos', 'notes.png', '--json', '--server', base], {MOD_API_KEY: KEY})
  assert.is(r.code, 1, 'a violation outranks an error entry, as locally')
  const results = JSON.parse(r.stdout) as {source: string; is_safe?: boolean; error?: {code: string}}[]
  assert.equal(results.find((x) => x.source === 'notes.png')?.error?.code, 'unsupported_media')
  assert.equal(results.filter((x) => x.is_safe === false).map((x) => x.source), ['photos/p0.png', 'photos/p3.png', 'photos/p6.png', 'photos/p9.png'])
  assert.match(r.stderr, /^mod: server: http:\/\/127\.0\.0\.1:\d+\/ \(mod \d+\.\d+\.\d+\S*, preset fast, model toy-clip, policy sha256 [0-9a-f]{12}\)\n/)
})

test('safe inputs exit 0, as locally; MOD_SERVER names the server', async () => {
  const r = await scan(['photos/p1.png', 'photos/p2.png'], {MOD_SERVER: base, MOD_API_KEY: KEY})
  assert.is(r.code, 0, r.stderr)
  assert.is(r.stdout, (await localScan(['photos/p1.png', 'photos/p2.png'])).stdout)
})

test('a wrong or missing key is a clear error and exit 2; model and policy flags are refused with --server', async () => {
  const wrong = await scan(['photos', '--server', base, '--api-key', 'nope'])
  assert.is(wrong.code, 2)
  assert.is(wrong.stderr, `mod: unauthorized: the server ${base}/ answered 401: it refused the API key given (--api-key / MOD_API_KEY)\n`)
  const missing = await scan(['photos', '--server', base])
  assert.is(missing.code, 2)
  assert.match(missing.stderr, /answered 401: it wants an API key: give --api-key or MOD_API_KEY\n$/)
  const flags = await remote(['photos', '--config', policy, '--threshold', 'redness=0.2'])
  assert.is(flags.code, 2)
  assert.is(flags.stderr, 'mod: usage: --config, --threshold cannot be used with --server: the server scores with its own model and policy (the first stderr line names them); set them on the server\n')
  const bad = await remote(['photos'], 'ftp://example.com')
  assert.is(bad.code, 2)
  assert.match(bad.stderr, /^mod: invalid_config: --server \/ MOD_SERVER="ftp:\/\/example.com" is not valid: expected an http:\/\/ or https:\/\/ URL/)
  // A password in the URL would be printed on every line naming the server (CI logs), and never sent.
  const withPassword = base.replace('://', '://user:pa55word@')
  for (const r of [await remote(['photos'], withPassword), await scan(['photos'], {MOD_SERVER: withPassword.replace('http:', 'ftp:'), MOD_API_KEY: KEY})]) {
    assert.is(r.code, 2)
    assert.is(r.stderr, "mod: invalid_config: --server / MOD_SERVER holds a user name or password: mod sends the API key only (--api-key / MOD_API_KEY); give the server's URL without them\n")
  }
  // A key with a line break inside cannot be a header: said as a setting's problem, not undici's.
  const broken = await scan(['photos', '--server', base], {MOD_API_KEY: 'two\nlines'})
  assert.equal([broken.code, broken.stderr], [2, 'mod: invalid_config: --api-key / MOD_API_KEY holds a control character (a line break inside it, say): an HTTP header cannot carry it\n'])
})

test("a balancer's 502 page, then 503 with Retry-After: the batch is sent again after each, once the wait is over, and the result is whole", async () => {
  const refused: number[] = []
  const retried: number[] = []
  const url = await listen(
    proxy(base, (req, res) => {
      if (req.url !== '/v1/moderate/batch') return false
      // First a balancer's own page (no server behind it for a moment), then the server's 503 with Retry-After.
      if (refused.length === 0) {
        refused.push(Date.now())
        req.resume()
        res.writeHead(502, {'content-type': 'text/html'}).end('<html><body>502 Bad Gateway</body></html>')
        return true
      }
      if (refused.length === 1) {
        refused.push(Date.now())
        req.resume()
        res.writeHead(503, {'content-type': 'application/json', 'retry-after': '1'}).end('{"error":{"code":"overloaded","message":"the queue is full"}}')
        return true
      }
      retried.push(Date.now())
      return false
    }),
  )
  const r = await remote(['photos', '--json', '--concurrency', '1'], url)
  assert.is(r.code, 1, r.stderr)
  assert.is(r.stdout, (await localScan(['photos', '--json'])).stdout)
  assert.is(refused.length, 2)
  assert.ok(retried[0] - refused[1] >= 950, `the retry waited ${retried[0] - refused[1]} ms after Retry-After: 1`)
})

test('a fleet behind a balancer: a server killed mid-run is replaced by the other for the requests it dropped', async () => {
  const victim = await standby
  const backends = [victim.port, basePort]
  let next = 0
  let victimRequests = 0
  // Round robin over connections, as a TCP balancer does; it sends to the dead server too until its connect fails.
  const balancer = createTcpServer((client: Socket) => {
    const port = backends[next++ % backends.length]
    const upstream = createConnection({host: '127.0.0.1', port})
    upstream.on('error', () => client.destroy())
    client.on('error', () => upstream.destroy())
    client.on('data', (chunk: Buffer) => {
      // The victim dies as its first batch request starts arriving: that request is cut off mid-upload.
      if (port === victim.port && chunk.includes('POST /v1/moderate/batch') && ++victimRequests === 1) victim.process.child.kill('SIGKILL')
    })
    client.pipe(upstream).pipe(client)
  })
  const url = await listen(balancer)
  const r = await remote(['photos', '--json', '--concurrency', '2'], url)
  assert.ok(victimRequests >= 1, 'the killed server had taken a request')
  assert.is(await victim.process.exited, 'SIGKILL')
  assert.is(r.code, 1, r.stderr)
  assert.is(r.stdout, (await localScan(['photos', '--json'])).stdout)
})

test('a server gone for good: the run fails clearly (exit 2); rerun with the same --resume journal, it sends only the rest', async () => {
  let batches = 0
  let gone = true
  const url = await listen(
    proxy(base, (req) => {
      if (req.url !== '/v1/moderate/batch') return false
      batches++
      // After two batches the server stops answering: the connection is cut.
      if (gone && batches > 2) {
        req.socket.destroy()
        return true
      }
      return false
    }),
  )
  const journal = join(work, 'journal.ndjson')
  const args = ['photos', '--json', '--concurrency', '1', '--retries', '1', '--resume', journal]
  const first = await remote(args, url)
  assert.is(first.code, 2, first.stderr)
  assert.match(first.stderr, /\nmod: server_unreachable: POST \/v1\/moderate\/batch to http:\/\/127\.0\.0\.1:\d+\/ failed 2 times, last with [A-Z_]+ [^\n]*: the server is down, unreachable or overloaded\n$/)
  const finished = JSON.parse(`[${first.stdout.trim().replace(/^\[|\]$/g, '')}]`) as {source: string}[]
  assert.is(finished.length, 6, 'what finished is printed, as valid JSON')
  const lines = readFileSync(journal, 'utf8').trim().split('\n')
  assert.is(lines.length, 7, 'a header and the six inputs of the two batches answered')
  gone = false
  batches = 0
  const second = await remote(args, url)
  assert.is(second.code, 1, second.stderr)
  assert.match(second.stderr, /\nmod: resume: 6 inputs already scored in \S+journal\.ndjson\n/)
  assert.is(batches, 2, 'only the four inputs left were sent (two batches of at most 3)')
  assert.is(second.stdout, (await localScan(['photos', '--json'])).stdout)
})

test('a fleet whose servers differ in policy (a deploy half done): the run stops at the first verdict of the other, which is neither printed nor journaled', async () => {
  const {policy: stated} = (await (await fetch(`${base}/health`)).json()) as {policy: {sha256: string}}
  const seen: unknown[] = []
  const url = await listen(
    proxy(
      base,
      () => false,
      (req, headers) => {
        if (req.url !== '/v1/moderate/batch') return
        seen.push(headers['x-mod-policy-sha256'])
        // The second batch is answered by a server already on another policy.
        if (seen.length === 2) headers['x-mod-policy-sha256'] = 'f'.repeat(64)
      },
    ),
  )
  const journal = join(dir.path, 'mixed.ndjson')
  const r = await remote(['photos', '--json', '--concurrency', '1', '--resume', journal], url)
  assert.is(seen[0], stated.sha256, 'each verdict names the policy /health states')
  assert.is(r.code, 2, r.stderr)
  assert.match(
    r.stderr,
    `\nmod: bad_server_answer: the server ${url}/ answered POST /v1/moderate/batch under policy sha256 ffffffffffff, where the run began under ${stated.sha256.slice(0, 12)}: the servers behind it do not agree on one policy`,
  )
  assert.is((JSON.parse(r.stdout) as unknown[]).length, 3, 'the first batch only')
  assert.is(readFileSync(journal, 'utf8').trim().split('\n').length, 4, 'a header and the first batch')
})

test('more than 10 requests waiting to be sent again (--concurrency 12, a server answering 503) print nothing but mod\'s own lines', async () => {
  const many = join(dir.path, 'many')
  mkdirSync(many, {recursive: true})
  for (let i = 0; i < 36; i++) writeFileSync(join(many, `m${i}.png`), await solidPng(0, 0, i, 8, 8))
  let refused = 0
  const url = await listen(
    proxy(base, (req, res) => {
      if (req.url !== '/v1/moderate/batch') return false
      refused++
      req.resume()
      res.writeHead(503, {'content-type': 'application/json', 'retry-after': '1'}).end('{"error":{"code":"overloaded","message":"the queue is full"}}')
      return true
    }),
  )
  // A process of its own: Node prints its warnings on the process's stderr.
  const r = await runCli(['scan', many, '--server', url, '--concurrency', '12', '--retries', '1'], {env: {MOD_API_KEY: KEY}})
  assert.is(r.code, 2, r.stderr)
  assert.ok(refused >= 12, `each of the twelve batches was refused and waits at once (${refused} refusals)`)
  assert.equal(r.stderr.split('\n').filter((l) => l !== '' && !l.startsWith('mod: ')), [], r.stderr)
})

test('http_proxy: the requests go through the proxy the settings name (a CONNECT tunnel)', async () => {
  const seen: string[] = []
  // A forward proxy: requests in absolute form are forwarded, CONNECT opens a tunnel (undici's way for most targets).
  const tunnel = proxy(base, (req) => {
    seen.push(`${req.method} ${req.url}`)
    return false
  })
  tunnel.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
    seen.push(`${req.method} ${req.url}`)
    const [host, port] = (req.url ?? '').split(':')
    const upstream = createConnection({host, port: Number(port)}, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n')
      upstream.write(head)
      upstream.pipe(client).pipe(upstream)
    })
    upstream.on('error', () => client.destroy())
    client.on('error', () => upstream.destroy())
  })
  const url = await listen(tunnel)
  const r = await scan(['photos/p1.png', '--server', base], {MOD_API_KEY: KEY, http_proxy: url})
  assert.is(r.code, 0, r.stderr)
  assert.ok(seen.length > 0, 'the proxy was asked')
  for (const line of seen) assert.match(line, new RegExp(`^(CONNECT 127\\.0\\.0\\.1:${basePort}|(GET|POST) ${base}/)`))
})

test('a journal of another policy is refused by name', async () => {
  const journal = join(work, 'other.ndjson')
  writeFileSync(journal, `${JSON.stringify({mod_resume: 1, policy_sha256: '0'.repeat(64)})}\n`)
  const r = await runInProcess(['scan', 'photos', '--server', base, '--resume', journal], {cwd: work, env: {MOD_API_KEY: KEY}})
  assert.is(r.code, 2)
  assert.match(r.stderr, /mod: invalid_config: --resume \S+other\.ndjson was written under another policy \(sha256 000000000000; the server's is [0-9a-f]{12}\)/)
})

test('a journal in a folder that does not exist is the --resume path\'s error, not an internal one', async () => {
  const journal = join(work, 'no-such-folder', 'run.ndjson')
  const r = await remote(['photos', '--resume', journal])
  assert.is(r.code, 2)
  assert.is(r.stderr.split('\n').at(-2), `mod: invalid_config: --resume ${journal} cannot be written: ENOENT: no such file or directory, open '${journal}'`)
})

test('scan-video --server runs the video as a job on the server and prints what a local scan-video prints; a failed job is its error', async () => {
  for (const format of [['--json'], ['--ndjson'], []]) {
    const args = ['scan-video', 'clip.mp4', '--min-frames', '2', ...format]
    const l = await runInProcess([...args, '--config', policy], {cwd: work, env: local})
    const r = await runInProcess([...args, '--server', base], {cwd: work, env: {MOD_API_KEY: KEY}})
    assert.is(r.stdout, l.stdout, format.join(' '))
    assert.is(r.code, l.code, format.join(' '))
  }
  const bad = await runInProcess(['scan-video', 'notes.mp4', '--server', base], {cwd: work, env: {MOD_API_KEY: KEY}})
  const badLocal = await runInProcess(['scan-video', 'notes.mp4', '--config', policy], {cwd: work, env: local})
  assert.is(bad.code, 2)
  assert.is(bad.stderr.split('\n')[1].split(':')[1], badLocal.stderr.split(':')[1], `the same code: ${bad.stderr} / ${badLocal.stderr}`)
})

test('scan-video --server whose job the server lost (a restart without Redis) says so, exit 2, rather than "it never existed"', async () => {
  // The polls reach a server that does not know the job, as one restarted since the upload would not.
  const url = await listen(
    proxy(base, (req) => {
      if (req.method === 'GET' && req.url?.startsWith('/v1/jobs/')) req.url = '/v1/jobs/00000000-0000-4000-8000-000000000000'
      return false
    }),
  )
  const r = await runInProcess(['scan-video', 'clip.mp4', '--server', url], {cwd: work, env: {MOD_API_KEY: KEY}})
  assert.is(r.code, 2)
  assert.match(
    r.stderr.split('\n').at(-2) ?? '',
    new RegExp(`^mod: not_found: the server ${url}/ no longer has the job [0-9a-f-]{36} it accepted for this video: it was deleted, or the server restarted and lost it \\(without MOD_REDIS_URL its jobs live in its process\\); run the command again$`),
  )
})

test('Ctrl-C during scan --server stops at once: exit 130, valid JSON of what finished', async () => {
  let child: ReturnType<typeof spawn> | undefined
  let interrupted = false
  const url = await listen(
    proxy(base, (req) => {
      // The batches are held back: the command is waiting on them when Ctrl-C comes, once (a second Ctrl-C while
      // several batches are in flight would be the impatient one, which leaves without printing).
      if (req.url !== '/v1/moderate/batch') return false
      if (!interrupted) child?.kill('SIGINT')
      interrupted = true
      return true
    }),
  )
  child = spawn(process.execPath, [BIN, 'scan', 'photos', '--json', '--server', url], {cwd: work, env: {...process.env, MOD_API_KEY: KEY}, stdio: ['ignore', 'pipe', 'pipe']})
  let stdout = ''
  child.stdout?.on('data', (d) => (stdout += d))
  const code = await new Promise((resolve) => child?.on('close', (c) => resolve(c)))
  assert.is(code, 130)
  assert.equal(JSON.parse(stdout), [])
})

test('Ctrl-C during scan-video --server cancels the job on the server and exits 130', async () => {
  const seen: string[] = []
  let child: ReturnType<typeof spawn> | undefined
  const url = await listen(
    proxy(base, (req) => {
      seen.push(`${req.method} ${req.url?.replace(/[0-9a-f-]{36}/, '{id}')}`)
      // The first poll is held back: the command is waiting on it when Ctrl-C comes.
      if (req.method === 'GET' && req.url?.startsWith('/v1/jobs/')) {
        child?.kill('SIGINT')
        return true
      }
      return false
    }),
  )
  child = spawn(process.execPath, [BIN, 'scan-video', 'clip.mp4', '--server', url], {cwd: work, env: {...process.env, MOD_API_KEY: KEY}, stdio: 'ignore'})
  const code = await new Promise((resolve) => child?.on('close', (c) => resolve(c)))
  assert.is(code, 130)
  assert.equal(seen.filter((r) => r.includes('/jobs/')), ['POST /v1/jobs/video?fps=1&min_frames=1&stop_on_violation=false', 'GET /v1/jobs/{id}', 'DELETE /v1/jobs/{id}'])
})

test('scan-video --server that runs past --timeout cancels the job on the server, exit 2', async () => {
  const seen: string[] = []
  const url = await listen(
    proxy(base, (req) => {
      seen.push(`${req.method} ${req.url?.replace(/[0-9a-f-]{36}/, '{id}')}`)
      // Every poll is held back: the run's time ends while it waits.
      return req.method === 'GET' && req.url?.startsWith('/v1/jobs/') === true
    }),
  )
  const r = await runInProcess(['scan-video', 'clip.mp4', '--server', url, '--timeout', '1'], {cwd: work, env: {MOD_API_KEY: KEY}})
  assert.is(r.code, 2, r.stderr)
  assert.match(r.stderr, '(--timeout)')
  assert.equal(seen.filter((x) => x.includes('/jobs/')), ['POST /v1/jobs/video?fps=1&min_frames=1&stop_on_violation=false', 'GET /v1/jobs/{id}', 'DELETE /v1/jobs/{id}'])
})

test.run()

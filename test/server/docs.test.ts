import {createHash} from 'node:crypto'
import {readdirSync, readFileSync, readlinkSync} from 'node:fs'
import {createServer, request, type IncomingMessage, type Server, type ServerResponse} from 'node:http'
import {createRequire} from 'node:module'
import {connect, type AddressInfo} from 'node:net'
import {dirname, join} from 'node:path'
import {runInNewContext} from 'node:vm'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {DEFAULT_LIMITS} from '../../src/lib/config/settings.js'
import {DOCS_CSP, docsRoutes, type DocsRoute} from '../../src/server/docs.js'
import {openapiDocument, openapiHandler} from '../../src/server/openapi.js'

const SWAGGER_DIR = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'))
const SWAGGER_VERSION = (JSON.parse(readFileSync(join(SWAGGER_DIR, 'package.json'), 'utf8')) as {version: string}).version
const doc = openapiDocument({version: '1.2.3', apiKey: true, allowUrls: false, limits: DEFAULT_LIMITS})

/** Routes the way polka 0.5 does for `app.get(path)`: an exact path (a trailing slash allowed), or a `/*` prefix. */
function serve(routes: DocsRoute[]): Server {
  const all = [{path: '/openapi.json', handler: openapiHandler(doc)}, ...routes]
  const matches = (pattern: string, pathname: string): boolean =>
    pattern.endsWith('/*')
      ? pathname.startsWith(pattern.slice(0, -1)) && pathname.length > pattern.length - 1
      : pathname === pattern || pathname === `${pattern}/`
  return createServer((req: IncomingMessage, res: ServerResponse) => {
    const pathname = (req.url ?? '/').split('?')[0]
    const route = all.find((r) => matches(r.path, pathname))
    if (route) return route.handler(req, res)
    res.statusCode = 418
    res.end()
  })
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** A raw GET: fetch would normalise `..` away before sending. */
function rawGet(base: string, path: string): Promise<{status: number; type: string; body: string; requestId: string}> {
  return new Promise((done, fail) => {
    const req = request(`${base}/`, {path, method: 'GET'}, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (d: string) => (body += d))
      res.on('end', () => done({status: res.statusCode ?? 0, type: String(res.headers['content-type']), body, requestId: String(res.headers['x-request-id'])}))
    })
    req.on('error', fail)
    req.end()
  })
}

const server = serve(docsRoutes())
let base = ''

test.before(async () => {
  base = await listen(server)
})

test.after(() => {
  server.close()
})

test('GET /docs is an HTML page with a strict CSP that loads only same-origin files', async () => {
  const res = await fetch(`${base}/docs`)
  assert.is(res.status, 200)
  assert.is(res.headers.get('content-type'), 'text/html; charset=utf-8')
  assert.is(res.headers.get('content-security-policy'), DOCS_CSP)
  assert.is(res.headers.get('cache-control'), 'no-cache')
  const html = await res.text()
  assert.not.match(html, /:\/\//)
  const urls = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1])
  const v = `?v=${SWAGGER_VERSION}`
  // The init script's URL names the start of its content's sha256.
  const init = Buffer.from(await (await fetch(`${base}/docs/init.js`)).arrayBuffer())
  const initVersion = createHash('sha256').update(init).digest('hex').slice(0, 16)
  // Relative to the page, so that they hold under a reverse proxy's path prefix.
  assert.equal(urls, [
    `docs/swagger-ui.css${v}`,
    `docs/index.css${v}`,
    `docs/favicon-32x32.png${v}`,
    `docs/favicon-16x16.png${v}`,
    'openapi.json',
    `docs/swagger-ui-bundle.js${v}`,
    `docs/swagger-ui-standalone-preset.js${v}`,
    `docs/init.js?v=${initVersion}`,
  ])
})

test('the CSP allows scripts, connections and fonts from the server only', () => {
  const directives = new Map(DOCS_CSP.split('; ').map((d) => [d.split(' ')[0], d.split(' ').slice(1)]))
  assert.equal(directives.get('default-src'), ["'none'"])
  assert.equal(directives.get('script-src'), ["'self'"])
  assert.equal(directives.get('connect-src'), ["'self'"])
  assert.equal(directives.get('frame-ancestors'), ["'none'"])
  assert.not.match(DOCS_CSP, /unsafe-eval|https?:|\*/)
})

test('GET /docs/ redirects to /docs with a relative Location that keeps the query, and a browser lands on the page', async () => {
  for (const [path, location] of [
    ['/docs/', '../docs'],
    ['/docs/?x=1', '../docs?x=1'],
  ]) {
    const res = await fetch(`${base}${path}`, {redirect: 'manual'})
    assert.equal([res.status, res.headers.get('location')], [301, location], path)
    assert.is(new URL(location, `http://h/prefix${path}`).pathname, '/prefix/docs', path)
  }
  const [a, b] = await Promise.all([fetch(`${base}/docs`), fetch(`${base}/docs/`)])
  assert.equal([b.status, b.url], [200, `${base}/docs`])
  assert.is(await b.text(), await a.text())
})

test('every Swagger UI file loads from the installed package with its content type, at its versioned URL with a long cache', async () => {
  const expected: [string, string][] = [
    ['swagger-ui.css', 'text/css; charset=utf-8'],
    ['index.css', 'text/css; charset=utf-8'],
    ['swagger-ui-bundle.js', 'text/javascript; charset=utf-8'],
    ['swagger-ui-standalone-preset.js', 'text/javascript; charset=utf-8'],
    ['favicon-32x32.png', 'image/png'],
    ['favicon-16x16.png', 'image/png'],
  ]
  for (const [name, type] of expected) {
    const res = await fetch(`${base}/docs/${name}?v=${SWAGGER_VERSION}`)
    assert.is(res.status, 200, name)
    assert.is(res.headers.get('content-type'), type, name)
    assert.is(res.headers.get('cache-control'), 'public, max-age=31536000, immutable', name)
    assert.is(res.headers.get('etag'), `"${SWAGGER_VERSION}"`, name)
    assert.is(res.headers.get('x-content-type-options'), 'nosniff', name)
    const body = Buffer.from(await res.arrayBuffer())
    assert.is(Number(res.headers.get('content-length')), body.length, name)
    assert.ok(body.equals(readFileSync(join(SWAGGER_DIR, name))), name)
  }
})

test('a file asked for without its version, or with another one (a page of an older version), is revalidated; a revalidation is a 304 without the body', async () => {
  const html = await (await fetch(`${base}/docs`)).text()
  const files = [...html.matchAll(/(?:src|href)="(docs\/[^"?]+)\?v=([^"]+)"/g)].map((m) => ({path: `/${m[1]}`, version: m[2]}))
  assert.is(files.length, 7)
  for (const {path, version} of files) {
    for (const query of ['', '?v=0.0.1', '?x=1']) {
      const res = await fetch(`${base}${path}${query}`)
      assert.equal([res.status, res.headers.get('cache-control'), res.headers.get('etag')], [200, 'no-cache', `"${version}"`], `${path}${query}`)
    }
    for (const tag of [`"${version}"`, `W/"${version}"`, `"other", "${version}"`, '*']) {
      const res = await fetch(`${base}${path}?v=${version}`, {headers: {'If-None-Match': tag}})
      const seen = [res.status, res.headers.get('etag'), res.headers.get('cache-control'), await res.text()]
      assert.equal(seen, [304, `"${version}"`, 'public, max-age=31536000, immutable', ''], `${path} ${tag}`)
    }
    const changed = await fetch(`${base}${path}?v=${version}`, {headers: {'If-None-Match': '"0.0.1"'}})
    assert.is(changed.status, 200, path)
  }
})

test('the page and the document carry an entity tag of their content: a revalidation of the same is a 304 without the body', async () => {
  for (const path of ['/docs', '/openapi.json']) {
    const first = await fetch(`${base}${path}`)
    const body = Buffer.from(await first.arrayBuffer())
    const tag = first.headers.get('etag') ?? ''
    assert.equal([first.status, first.headers.get('cache-control'), tag], [200, 'no-cache', `"${createHash('sha256').update(body).digest('hex').slice(0, 16)}"`], path)
    const again = await fetch(`${base}${path}`, {headers: {'If-None-Match': tag}})
    assert.equal([again.status, again.headers.get('etag'), again.headers.get('cache-control'), await again.text()], [304, tag, 'no-cache', ''], path)
    const other = await fetch(`${base}${path}`, {headers: {'If-None-Match': '"0000000000000000"'}})
    assert.equal([other.status, Buffer.from(await other.arrayBuffer()).equals(body)], [200, true], path)
  }
})

/** This process's open file descriptors on swagger-ui-dist's files. */
function openSwaggerFiles(): string[] {
  const targets = readdirSync('/proc/self/fd').map((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`)
    } catch {
      return '' // closed since it was listed
    }
  })
  return targets.filter((target) => target.startsWith(`${SWAGGER_DIR}/`))
}

test('pipelined asset requests of a client that hangs up leave no file open', async () => {
  const {port} = new URL(base)
  const gets = 'GET /docs/swagger-ui.css HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(6)
  await Promise.all(
    Array.from({length: 10}, () =>
      new Promise<void>((closed) => {
        const socket = connect(Number(port), '127.0.0.1', () => socket.end(gets, () => socket.destroy()))
        socket.on('close', () => closed())
        socket.on('error', () => {})
      }),
    ),
  )
  const gone = Date.now() + 2000
  while ((await new Promise<number>((done, fail) => server.getConnections((e, n) => (e ? fail(e) : done(n))))) > 0 && Date.now() < gone) {
    await new Promise((done) => setTimeout(done, 20))
  }
  await new Promise((done) => setTimeout(done, 50))
  assert.equal(openSwaggerFiles(), [])
})

test("the init script starts Swagger UI on openapi.json (relative to the page) with try-it-out, keeping no key in the browser's storage", async () => {
  const res = await fetch(`${base}/docs/init.js`)
  assert.is(res.status, 200)
  assert.is(res.headers.get('content-type'), 'text/javascript; charset=utf-8')
  const source = await res.text()
  assert.not.match(source, /:\/\//)

  const listeners: Record<string, () => void> = {}
  const calls: Record<string, unknown>[] = []
  const stored = new Map([['authorized', '{"ApiKey":{"value":"a key saved by an earlier version"}}']])
  const localStorage = {removeItem: (name: string) => stored.delete(name)}
  const window: Record<string, unknown> = {addEventListener: (event: string, fn: () => void) => (listeners[event] = fn), localStorage}
  const SwaggerUIBundle = Object.assign(
    (config: Record<string, unknown>) => {
      calls.push(config)
      return 'ui'
    },
    {presets: {apis: 'apis-preset'}, plugins: {DownloadUrl: 'download-plugin'}},
  )
  runInNewContext(source, {window, SwaggerUIBundle, SwaggerUIStandalonePreset: 'standalone-preset'})
  assert.equal(calls, [])
  listeners.load()
  // The config object was made inside the vm context; compare it as plain data.
  assert.equal(JSON.parse(JSON.stringify(calls)), [
    {
      url: 'openapi.json',
      dom_id: '#swagger-ui',
      deepLinking: true,
      tryItOutEnabled: true,
      persistAuthorization: false,
      displayRequestDuration: true,
      validatorUrl: null,
      layout: 'StandaloneLayout',
      presets: ['apis-preset', 'standalone-preset'],
      plugins: ['download-plugin', null, null, null],
    },
  ])
  assert.equal([...(calls[0].plugins as unknown[]).slice(1)].map((p) => typeof p), ['function', 'function', 'function'])
  assert.is(window.ui, 'ui')
  assert.equal([...stored.keys()], [])
})

test("the init script's resolver: parts with no reference outside the paths as they are, the first operation by Swagger UI's, then every part from the whole document resolved once", async () => {
  const source = await (await fetch(`${base}/docs/init.js`)).text()
  const listeners: Record<string, () => void> = {}
  const configs: {plugins: unknown[]}[] = []
  const SwaggerUIBundle = Object.assign((config: {plugins: unknown[]}) => void configs.push(config), {presets: {apis: 'apis'}, plugins: {DownloadUrl: 'download'}})
  // No structuredClone in this context, as in browsers before 2022; timers run when the test says.
  const timers: (() => void)[] = []
  const window = {addEventListener: (event: string, fn: () => void) => (listeners[event] = fn), localStorage: {removeItem: () => {}}}
  runInNewContext(source, {window, SwaggerUIBundle, SwaggerUIStandalonePreset: 'standalone', setTimeout: (fn: () => void) => timers.push(fn)})
  listeners.load()
  const plugin = configs[0].plugins[3] as (system: unknown) => {fn: {resolveSubtree: (obj: unknown, path: string[], options: unknown) => Promise<{spec: unknown; errors: unknown[]}>}}

  const document = {
    openapi: '3.1.0',
    paths: {'/a': {get: {responses: {200: {$ref: '#/components/responses/R'}}}}, '/b': {get: {responses: {200: {$ref: '#/components/responses/R'}}}}},
    components: {responses: {R: {description: 'r'}}, securitySchemes: {K: {type: 'apiKey', in: 'header', name: 'X'}}, schemas: {S: {$ref: '#/components/schemas/T'}, T: {type: 'string'}}},
  }
  const resolved = {
    ...document,
    paths: {'/a': {get: {responses: {200: {description: 'r'}}}}, '/b': {get: {responses: {200: {description: 'r'}}}}},
    components: {...document.components, schemas: {S: {type: 'string'}, T: {type: 'string'}}},
  }
  const problem = {fullPath: ['paths', '/b', 'get', 'responses'], message: 'a problem under /b'}
  const asked: string[] = []
  const original = async (_obj: unknown, path: string[]) => {
    asked.push(path.join(' '))
    const part = path.reduce<unknown>((p, key) => (p as Record<string, unknown> | undefined)?.[key], resolved) ?? null
    return {spec: part, errors: path.length === 0 || path.join(' ').startsWith('paths /b get') ? [problem] : []}
  }
  let json = {}
  const system = {fn: {resolveSubtree: original}, specSelectors: {specJson: () => json, specJS: () => JSON.parse(JSON.stringify(document))}}
  const resolve = plugin(system).fn.resolveSubtree
  const plain = (v: unknown): string => JSON.stringify(v)

  // Taken as they are (a copy), and null for a part the document lacks: Swagger UI's resolver is not asked.
  const schemes = await resolve({}, ['components', 'securitySchemes'], {})
  assert.is(plain(schemes), plain({spec: document.components.securitySchemes, errors: []}))
  assert.is(plain(await resolve({}, ['components', 'schemas', 'None'], {})), plain({spec: null, errors: []}))
  assert.equal(asked, [])
  // A schema that holds a reference, before any operation: Swagger UI's, with the document it was given.
  assert.is(plain(await resolve(document, ['components', 'schemas', 'S'], {})), plain({spec: {type: 'string'}, errors: []}))
  assert.equal(asked, ['components schemas S'])
  // The first operation: Swagger UI's; a second before the page is idle resolves the whole document, and answers
  // from it with the problems found under it alone.
  assert.is(plain(await resolve(document, ['paths', '/a', 'get'], {})), plain({spec: resolved.paths['/a'].get, errors: []}))
  assert.is(plain(await resolve({}, ['paths', '/b', 'get'], {})), plain({spec: resolved.paths['/b'].get, errors: [problem]}))
  assert.is(plain(await resolve({}, ['paths', '/a', 'get'], {})), plain({spec: resolved.paths['/a'].get, errors: []}))
  assert.is(plain(await resolve({}, ['components', 'schemas', 'S'], {})), plain({spec: {type: 'string'}, errors: []}))
  assert.equal(asked, ['components schemas S', 'paths /a get', ''])
  // Each answer is a copy: Swagger UI writes into them.
  const first = await resolve({}, ['paths', '/a', 'get'], {})
  ;(first.spec as {responses: unknown}).responses = 'changed'
  assert.is(plain((await resolve({}, ['paths', '/a', 'get'], {})).spec), plain(resolved.paths['/a'].get))
  // The idle-time resolution that the first operation set off finds it done.
  for (const run of timers.splice(0)) run()
  assert.equal(asked, ['components schemas S', 'paths /a get', ''])
  // Another document loaded: resolved anew, once.
  json = {}
  await resolve({}, ['paths', '/a', 'get'], {})
  await resolve({}, ['paths', '/b', 'get'], {})
  assert.equal(asked, ['components schemas S', 'paths /a get', '', ''])
})

test('a path outside the fixed list of files is 404, whatever its encoding', async () => {
  const attempts = [
    '/docs/../package.json',
    '/docs/..%2Fpackage.json',
    '/docs/%2e%2e/package.json',
    '/docs/%2e%2e%2fpackage.json',
    '/docs/..%5cpackage.json',
    '/docs/swagger-ui.css/../../package.json',
    '/docs//etc/passwd',
    '/docs/package.json',
    '/docs/index.html',
    '/docs/swagger-ui-bundle.js.map',
    '/docs/swagger-initializer.js',
    '/docs/swagger-ui.CSS',
    '/docs/%73wagger-ui.css',
    '/docs/swagger-ui.css%00',
    '/docs/constructor',
    '/docs/__proto__',
  ]
  for (const path of attempts) {
    const res = await rawGet(base, path)
    assert.is(res.status, 404, path)
    assert.is(res.type, 'application/json; charset=utf-8', path)
    const {request_id: id, ...error} = JSON.parse(res.body).error
    assert.equal({error}, {error: {code: 'not_found', message: 'no such documentation file'}}, path)
    assert.is(id, res.requestId, path)
  }
})

test('the caller can supply its own 404 answer', async () => {
  const own = serve(
    docsRoutes({
      notFound: (_req, res) => {
        res.statusCode = 404
        res.end('mine')
      },
    }),
  )
  const ownBase = await listen(own)
  try {
    const res = await rawGet(ownBase, '/docs/../package.json')
    assert.equal([res.status, res.body], [404, 'mine'])
  } finally {
    own.close()
  }
})

test('the asset handler redirects /docs/ to the page and finds names in originalUrl (polka use())', async () => {
  const [, assets] = docsRoutes()
  const mounted = createServer((req, res) => {
    Object.assign(req, {originalUrl: req.url, url: (req.url ?? '').slice('/docs'.length)})
    assets.handler(req, res)
  })
  const mountedBase = await listen(mounted)
  try {
    const res = await fetch(`${mountedBase}/docs/favicon-16x16.png`)
    assert.is(res.status, 200)
    assert.is(res.headers.get('content-type'), 'image/png')
    const page = await fetch(`${mountedBase}/docs/?x=1`, {redirect: 'manual'})
    assert.equal([page.status, page.headers.get('location')], [301, '../docs?x=1'])
  } finally {
    mounted.close()
  }
})

test('openapiHandler serves the document as JSON', async () => {
  const res = await fetch(`${base}/openapi.json`)
  assert.is(res.status, 200)
  assert.is(res.headers.get('content-type'), 'application/json; charset=utf-8')
  assert.is(res.headers.get('cache-control'), 'no-cache')
  assert.equal(await res.json(), JSON.parse(JSON.stringify(doc)))
})

test('docsRoutes names the two paths the server mounts', () => {
  assert.equal(
    docsRoutes().map((r) => r.path),
    ['/docs', '/docs/*'],
  )
})

test.run()

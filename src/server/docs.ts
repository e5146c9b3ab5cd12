import {readFile} from 'node:fs/promises'
import type {IncomingMessage, ServerResponse} from 'node:http'
import {createRequire} from 'node:module'
import {dirname, join} from 'node:path'

import {answeredNotModified, contentVersion, entityTagOf} from './entity-tags.js'
import {httpError} from './errors.js'
import {DETAILS_TITLE, type Handler} from './openapi.js'
import {sendError} from './reply.js'

/**
 * The interactive documentation at /docs: Swagger UI from the installed `swagger-ui-dist` package,
 * every file served by this server (no CDN), under a Content-Security-Policy that allows only 'self'.
 */

export interface DocsRoute {
  path: string
  handler: Handler
}

export interface DocsOptions {
  /** Answers a /docs/… path that is not one of the assets; default: 404 with a JSON error body. */
  notFound?: Handler
  /** Answers an asset that could not be read; default: 500 with a JSON error body. */
  failed?: (res: ServerResponse, e: unknown) => void
}

const JS = 'text/javascript; charset=utf-8'
const CSS = 'text/css; charset=utf-8'

/** The only files of swagger-ui-dist that are served; any other name is 404, so no path reaches the disk. */
const VENDOR_FILES = new Map([
  ['swagger-ui.css', CSS],
  ['index.css', CSS],
  ['swagger-ui-bundle.js', JS],
  ['swagger-ui-standalone-preset.js', JS],
  ['favicon-32x32.png', 'image/png'],
  ['favicon-16x16.png', 'image/png'],
])

const INIT_FILE = 'init.js'

/**
 * Swagger UI sets inline styles (hence 'unsafe-inline' for styles only), its stylesheet draws icons from
 * data: URIs, and try-it-out shows image responses from blob: URLs. Scripts come only from this server.
 */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

/** Resolved through the module system so it works from src/ under tsx and from dist/. */
function swaggerUiDir(): {dir: string; version: string} {
  const require = createRequire(import.meta.url)
  const manifest = require.resolve('swagger-ui-dist/package.json')
  const {version} = require(manifest) as {version: string}
  return {dir: dirname(manifest), version}
}

/**
 * Swagger UI shows the document's description above the operations. Ours ends with reference tables (limits,
 * formats, errors) that would push the first operation far down, so a small plugin shows the description up
 * to the DETAILS_TITLE heading above the operations and the rest below them.
 */
function initScript(): string {
  const config = {
    // Relative to the page, as every URL it names (see page()).
    url: 'openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    tryItOutEnabled: true,
    // The key typed into Authorize lives as long as the page: persisted, it would stay in the browser's
    // localStorage in clear, after the server has gone, for any later page of the same origin (localhost:8000) to read.
    persistAuthorization: false,
    displayRequestDuration: true,
    // The default would send the document to validator.swagger.io.
    validatorUrl: null,
    layout: 'StandaloneLayout',
  }
  return [
    "'use strict'",
    `var DETAILS = ${JSON.stringify(`\n# ${DETAILS_TITLE}\n`)}`,
    'function detailsAfterOperations() {',
    '  return {',
    '    statePlugins: {spec: {wrapSelectors: {selectInfoDescriptionField: function (original) {',
    '      return function () {',
    '        var text = original.apply(null, arguments)',
    "        return typeof text === 'string' ? text.split(DETAILS)[0] : text",
    '      }',
    '    }}}},',
    '    wrapComponents: {operations: function (Original, system) {',
    '      return function (props) {',
    '        var h = system.React.createElement',
    "        var text = system.specSelectors.specJson().getIn(['info', 'description'])",
    "        var at = typeof text === 'string' ? text.indexOf(DETAILS) : -1",
    '        if (at === -1) return h(Original, props)',
    "        var Markdown = system.getComponent('Markdown', true)",
    "        return h('div', null, h(Original, props),",
    "          h('section', {className: 'info mod-details', id: 'limits-formats-and-errors'}, h(Markdown, {source: text.slice(at + 1)})))",
    '      }',
    '    },',
    // An image job's results are NDJSON, one JSON document a line: Swagger UI reads any type naming json as one
    // document and shows "can't parse JSON" above a correct answer of more than one line. Shown as the text it is.
    '    responseBody: function (Original, system) {',
    '      return function (props) {',
    "        if (!/^application\\/x-ndjson/i.test(props.contentType || '') || typeof props.content !== 'string') return system.React.createElement(Original, props)",
    '        var h = system.React.createElement',
    "        var HighlightCode = system.getComponent('HighlightCode', true)",
    "        return h('div', null, h('h5', null, 'Response body'), h(HighlightCode, {downloadable: true, fileName: 'results.ndjson', canCopy: true}, props.content))",
    '      }',
    '    }},',
    '  }',
    '}',
    // The upload fields that take several files (type array, items type string, format binary) make Swagger UI look
    // up a component named by the items' type and format, JsonSchema_string_binary, that it lacks: it warns "Could
    // not find component" in the console, then draws a file input for each item all the same. The component it
    // looks up, drawn as a string's field, which is a file input for format binary. (No other form of the schema
    // gets those file inputs: without format binary the items are text fields.)
    'function binaryStrings(system) {',
    '  return {components: {JsonSchema_string_binary: function (props) {',
    "    return system.React.createElement(system.getComponent('JsonSchema_string'), props)",
    '  }}}',
    '}',
    // Swagger UI resolves an operation's references as it opens, and for an OpenAPI 3.1 document each of those
    // resolutions converts and normalises the whole document again (swagger-api/swagger-ui#10748): about 0.8 s of
    // a slow 2-core machine's main thread per operation, whatever its size. So the first operation opens as before,
    // then the whole document is resolved once (about 2 s there: in idle time, or at once when a second operation
    // opens first), and each operation or schema opened after is its part of that. The argument Swagger UI passes is
    // its document with the parts resolved so far: the same document, so the page's own stands for it (another
    // document loaded starts over). A part outside the paths that holds no reference (the security schemes, asked for
    // as the page loads) is its own resolution, as is a part the document lacks (null): the normalising only changes
    // operations and their parameters.
    'function resolvedOnce(system) {',
    '  var original = system.fn.resolveSubtree',
    // structuredClone came to browsers after the syntax Swagger UI needs (Chrome 98, Safari 15.4): JSON's copy
    // before it, the same for a resolved document (circular references stay references).
    "  var copy = typeof structuredClone === 'function' ? structuredClone : function (value) { return JSON.parse(JSON.stringify(value)) }",
    '  function hasReference(value) {',
    "    if (!value || typeof value !== 'object') return false",
    "    if (Object.prototype.hasOwnProperty.call(value, '$ref')) return true",
    '    for (var key in value) if (Object.prototype.hasOwnProperty.call(value, key) && hasReference(value[key])) return true',
    '    return false',
    '  }',
    '  var whole = null',
    '  var opened = false',
    '  function resolveWhole(options) {',
    '    var mine = {of: system.specSelectors.specJson(), result: original(system.specSelectors.specJS(), [], options)}',
    '    whole = mine',
    '    mine.result.catch(function () { if (whole === mine) whole = null })',
    '  }',
    // A second after the first operation's answer, when the page is idle: Swagger UI draws the operation in tasks
    // after its answer, which an idle callback at once would come before.
    '  function soon(options) {',
    '    setTimeout(function () {',
    '      var run = function () { if (!whole) resolveWhole(options) }',
    "      if (typeof window.requestIdleCallback === 'function') window.requestIdleCallback(run, {timeout: 2000})",
    '      else run()',
    '    }, 1000)',
    '  }',
    '  return {fn: {resolveSubtree: function (obj, path, options) {',
    '    if (options && options.returnEntireTree) return original(obj, path, options)',
    "    if (path[0] !== 'paths' && path.length > 0) {",
    '      var part = system.specSelectors.specJS()',
    '      for (var i = 0; i < path.length && part; i++) part = part[path[i]]',
    '      if (!hasReference(part)) return Promise.resolve({spec: part ? copy(part) : null, errors: []})',
    '    }',
    '    if (whole && whole.of !== system.specSelectors.specJson()) whole = null',
    '    if (!whole) {',
    "      if (path[0] !== 'paths' || !opened) {",
    '        var answer = original(obj, path, options)',
    "        if (path[0] === 'paths') {",
    '          opened = true',
    '          answer.then(function () { soon(options) }, function () {})',
    '        }',
    '        return answer',
    '      }',
    '      resolveWhole(options)',
    '    }',
    '    return whole.result.then(function (resolved) {',
    '      var part = resolved.spec',
    '      for (var i = 0; i < path.length && part; i++) part = part[path[i]]',
    '      var errors = (resolved.errors || []).filter(function (e) {',
    '        return !Array.isArray(e.fullPath) || path.every(function (key, i) { return e.fullPath[i] === key })',
    '      })',
    // A copy: Swagger UI sets later parts into the ones it was given, which would change the resolved document.
    '      return {spec: part ? copy(part) : null, errors: errors}',
    '    }, function () { return original(obj, path, options) })',
    '  }}}',
    '}',
    "window.addEventListener('load', function () {",
    // Earlier versions persisted the key there: remove it (localStorage itself may be refused by the browser).
    "  try { window.localStorage.removeItem('authorized') } catch (e) {}",
    `  var config = ${JSON.stringify(config)}`,
    '  config.presets = [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset]',
    '  config.plugins = [SwaggerUIBundle.plugins.DownloadUrl, detailsAfterOperations, binaryStrings, resolvedOnce]',
    '  window.ui = SwaggerUIBundle(config)',
    '})',
    '',
  ].join('\n')
}

/**
 * Every URL the page names is relative to its address, /docs (docs/… for its files, openapi.json): behind a reverse
 * proxy that serves this server under a path prefix, the page at /mod/docs loads /mod/docs/… and /mod/openapi.json.
 */
function page(version: string, initVersion: string): string {
  const v = `?v=${encodeURIComponent(version)}`
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>mod API documentation</title>
<link rel="stylesheet" href="docs/swagger-ui.css${v}">
<link rel="stylesheet" href="docs/index.css${v}">
<link rel="icon" type="image/png" href="docs/favicon-32x32.png${v}" sizes="32x32">
<link rel="icon" type="image/png" href="docs/favicon-16x16.png${v}" sizes="16x16">
<style>
/* The reference tables are wider than a phone: each scrolls on its own instead of the whole page. */
.swagger-ui .mod-details table { display: block; max-width: 100%; overflow-x: auto; }
/* An open operation is wider than a phone too (its responses table, with the Links column, and the Cancel and
   Reset buttons beside "Parameters"): the table scrolls on its own and the buttons go below the heading. */
@media (max-width: 600px) {
.swagger-ui .responses-table { display: block; overflow-x: auto; }
.swagger-ui .opblock .opblock-section-header { flex-wrap: wrap; row-gap: 1.25rem; }
.swagger-ui .opblock .opblock-section-header .try-out { margin-left: auto; }
}
</style>
</head>
<body>
<div id="swagger-ui"></div>
<noscript>This page needs JavaScript. The API description itself is at <a href="openapi.json">/openapi.json</a>.</noscript>
<script src="docs/swagger-ui-bundle.js${v}"></script>
<script src="docs/swagger-ui-standalone-preset.js${v}"></script>
<script src="docs/${INIT_FILE}?v=${initVersion}"></script>
</body>
</html>
`
}

function commonHeaders(res: ServerResponse, contentType: string, cacheControl: string): void {
  res.setHeader('Content-Type', contentType)
  res.setHeader('Cache-Control', cacheControl)
  res.setHeader('X-Content-Type-Options', 'nosniff')
  res.setHeader('Referrer-Policy', 'no-referrer')
  res.setHeader('Cross-Origin-Resource-Policy', 'same-origin')
}

/**
 * The page names the versions of its files in their URLs, so it must be revalidated (its entity tag makes that a
 * 304 while it is the same); those URLs are cached for good.
 */
function sendPage(req: IncomingMessage, res: ServerResponse, body: Buffer, etag: string): void {
  if (answeredNotModified(req, res, etag, 'no-cache')) return
  res.statusCode = 200
  commonHeaders(res, 'text/html; charset=utf-8', 'no-cache')
  res.setHeader('ETag', etag)
  res.setHeader('Content-Length', body.length)
  res.end(body)
}

const defaultNotFound: Handler = (_req, res) => sendError(res, httpError('not_found', 'no such documentation file'))

const defaultFailed = (res: ServerResponse): void => sendError(res, httpError('internal', 'internal error'))

/** The `v` of the query: the version a URL of the page names. */
function versionAsked(req: IncomingMessage): string | null {
  return new URLSearchParams(targetOf(req).query).get('v')
}

/**
 * An asset of the page, `version` the one its URL names. Only the URL of the current version is cached for good:
 * another one (none, or one an older page named) may be asked again after an upgrade and get other bytes, so it is
 * revalidated. Its entity tag is the version, so a revalidation costs a 304 without the body.
 */
function sendAsset(
  req: IncomingMessage,
  res: ServerResponse,
  contentType: string,
  version: string,
  body: () => Promise<Buffer>,
  failed: (res: ServerResponse, e: unknown) => void,
): void {
  const etag = `"${version}"`
  const cache = versionAsked(req) === version ? 'public, max-age=31536000, immutable' : 'no-cache'
  if (answeredNotModified(req, res, etag, cache)) return
  body().then(
    (bytes) => {
      res.statusCode = 200
      commonHeaders(res, contentType, cache)
      res.setHeader('ETag', etag)
      res.setHeader('Content-Length', bytes.length)
      res.end(bytes)
    },
    (e: unknown) => failed(res, e),
  )
}

/**
 * The assets' bytes, each read once at its first request and then served from memory (about 2.2 MB in all). A file
 * streamed to a pipelined answer that Node queues behind another is never closed when the client hangs up first: the
 * queued answer gets no 'close', so nothing would end the stream. A file that could not be read is read again next time.
 */
function assetReader(dir: string): (name: string) => Promise<Buffer> {
  const read = new Map<string, Promise<Buffer>>()
  return (name) => {
    const known = read.get(name)
    if (known) return known
    const reading = readFile(join(dir, name))
    read.set(name, reading)
    reading.catch(() => read.delete(name))
    return reading
  }
}

/**
 * The request's path and its query (`?…`, or '' without one): the path polka matched, even when the app was mounted
 * with `use` (which strips the prefix from req.url).
 */
function targetOf(req: IncomingMessage): {pathname: string; query: string} {
  const url = (req as IncomingMessage & {originalUrl?: string}).originalUrl ?? req.url ?? '/'
  const q = url.indexOf('?')
  return q === -1 ? {pathname: url, query: ''} : {pathname: url.slice(0, q), query: url.slice(q)}
}

/**
 * /docs/ sends the browser to /docs, so that the page has one address (bookmarks, deep links) and the URLs of its
 * files, relative to that address, resolve the same for every visitor. The Location is relative too: it holds under
 * a reverse proxy's path prefix, which this server does not see. The query is kept; the browser keeps the fragment.
 */
const toPage: Handler = (req, res) => {
  res.statusCode = 301
  res.setHeader('Location', `../docs${targetOf(req).query}`)
  res.setHeader('Content-Length', 0)
  res.end()
}

/**
 * Handlers for GET /docs (the page; /docs/ redirects there) and GET /docs/* (its assets). An asset is found by exact
 * name in a fixed list, never by joining the request path onto a folder.
 */
export function docsRoutes(options: DocsOptions = {}): DocsRoute[] {
  const {dir, version} = swaggerUiDir()
  const notFound = options.notFound ?? defaultNotFound
  const failed = options.failed ?? defaultFailed
  const init = Buffer.from(initScript())
  // The init script changes with mod, not with Swagger UI: its URL names its own content.
  const initVersion = contentVersion(init)
  const html = Buffer.from(page(version, initVersion))
  const pageTag = entityTagOf(html)
  const asset = assetReader(dir)

  const pageHandler: Handler = (req, res) => {
    if (targetOf(req).pathname.endsWith('/')) return toPage(req, res)
    res.setHeader('Content-Security-Policy', DOCS_CSP)
    sendPage(req, res, html, pageTag)
  }

  const assetHandler: Handler = (req, res) => {
    const pathname = targetOf(req).pathname
    const name = pathname.startsWith('/docs/') ? pathname.slice('/docs/'.length) : undefined
    if (name === '') return toPage(req, res)
    if (name === INIT_FILE) return sendAsset(req, res, JS, initVersion, () => Promise.resolve(init), failed)
    const contentType = name === undefined ? undefined : VENDOR_FILES.get(name)
    if (name === undefined || contentType === undefined) return notFound(req, res)
    sendAsset(req, res, contentType, version, () => asset(name), failed)
  }

  return [
    {path: '/docs', handler: pageHandler},
    {path: '/docs/*', handler: assetHandler},
  ]
}

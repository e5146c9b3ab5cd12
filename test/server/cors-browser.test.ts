// A page on another origin, in headless chromium, using the API as MOD_CORS_ORIGINS allows: it uploads an image job
// and follows it to its results with the headers the job protocol relies on (Location, X-Mod-Job-Status,
// X-Mod-Items-Total), which a browser hides from the page unless the answer exposes them.
import {mkdirSync} from 'node:fs'
import {createServer, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'
import {join} from 'node:path'

import type {Browser} from 'playwright-core'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {launchChromium} from '../helpers/chromium.js'
import {fakeEngine, red, start, tempDir, testSettings, type Running} from './harness.js'

const KEY = 'cors-browser-key'
const dir = tempDir('mod-server-cors-browser-')
let page: Server
let origin = ''
let server: Running
let browser: Browser

test.before(async () => {
  page = createServer((_req, res) => res.writeHead(200, {'content-type': 'text/html'}).end('<!doctype html><title>app</title>'))
  await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve))
  origin = `http://127.0.0.1:${(page.address() as AddressInfo).port}`
  const storage = join(dir.path, 'jobs')
  mkdirSync(storage)
  const base = testSettings(join(dir.path, 'cache'), {apiKey: KEY, corsOrigins: [origin]})
  server = await start(fakeEngine(), {...base, jobs: {...base.jobs, storage}})
  browser = await launchChromium()
})

test.after(async () => {
  await browser.close()
  await server.stop()
  page.close()
  dir.remove()
})

test('a page on an allowed origin reads a new job\'s Location and its results\' X-Mod-Job-Status and X-Mod-Items-Total', async () => {
  const tab = await browser.newPage()
  await tab.goto(origin)
  const png = (await red()).toString('base64')
  // A string, not a function: tsx would wrap a function's inner helpers in a name helper the page lacks.
  const seen = (await tab.evaluate(`(async () => {
    const headers = {'X-API-Key': ${JSON.stringify(KEY)}}
    const body = new FormData()
    body.append('files', new Blob([Uint8Array.from(atob(${JSON.stringify(png)}), (c) => c.charCodeAt(0))], {type: 'image/png'}), 'red.png')
    const created = await fetch(${JSON.stringify(server.base)} + '/v1/jobs/images', {method: 'POST', headers, body})
    const location = created.headers.get('Location')
    for (let i = 0; i < 100; i++) {
      const results = await fetch(new URL(location + '/results', ${JSON.stringify(server.base)}), {headers})
      const status = results.headers.get('X-Mod-Job-Status')
      const lines = (await results.text()).trim().split('\\n')
      if (status !== 'running') return {created: created.status, location, status, total: results.headers.get('X-Mod-Items-Total'), lines: lines.length}
      await new Promise((r) => setTimeout(r, 100))
    }
    return {created: created.status, location, status: 'still running'}
  })()`)) as {created: number; location: string | null; status: string | null; total?: string | null; lines?: number}
  assert.is(seen.created, 202)
  assert.match(seen.location ?? '', /^\/v1\/jobs\/[0-9a-f-]+$/)
  assert.equal([seen.status, seen.total, seen.lines], ['done', '1', 1])
})

test.run()

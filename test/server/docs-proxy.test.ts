// The /docs page behind a real nginx that serves the server under a path prefix, as docs/operations.md configures
// it (`location /mod/ { proxy_pass http://127.0.0.1:8000/; }`): the page at /mod/docs loads its files and the
// OpenAPI document through the prefix, /mod/docs/ lands on it, and Try it out calls /mod/v1/…, not /v1/….
import {spawn, spawnSync, type ChildProcess} from 'node:child_process'
import {mkdirSync, readFileSync, writeFileSync} from 'node:fs'
import {connect} from 'node:net'
import {join} from 'node:path'

import type {Browser} from 'playwright-core'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {launchChromium} from '../helpers/chromium.js'
import {freePort} from '../helpers/redis.js'
import {testUnless} from '../helpers/skip.js'
import {fakeEngine, start, tempDir, testSettings, type Running} from './harness.js'

const KEY = 'docs-proxy-key'
const NGINX = '/usr/sbin/nginx'
const missing = spawnSync(NGINX, ['-v']).error ? `no ${NGINX} (Debian's nginx package)` : undefined
const dir = tempDir('mod-server-docs-proxy-')
let server: Running
let nginx: ChildProcess | undefined
let proxy = ''
let browser: Browser

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => socket.end(() => resolve(true)))
    socket.once('error', () => resolve(false))
  })
}

/** nginx in the foreground, one process, every file it writes in the test's folder. */
async function startNginx(upstream: string): Promise<string> {
  const port = await freePort()
  const root = join(dir.path, 'nginx')
  mkdirSync(root)
  const conf = join(root, 'nginx.conf')
  writeFileSync(
    conf,
    `daemon off;
master_process off;
pid ${root}/nginx.pid;
error_log ${root}/error.log;
events {}
http {
  access_log off;
  client_body_temp_path ${root}/body;
  proxy_temp_path ${root}/proxy;
  fastcgi_temp_path ${root}/fastcgi;
  uwsgi_temp_path ${root}/uwsgi;
  scgi_temp_path ${root}/scgi;
  server {
    listen 127.0.0.1:${port};
    location /mod/ {
      proxy_pass ${upstream}/;
    }
  }
}
`,
  )
  nginx = spawn(NGINX, ['-p', root, '-c', conf, '-e', join(root, 'error.log')], {stdio: 'ignore'})
  for (let i = 0; i < 100 && nginx.exitCode === null; i++) {
    if (await listening(port)) return `http://127.0.0.1:${port}`
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(`nginx did not start: ${readFileSync(join(root, 'error.log'), 'utf8')}`)
}

test.before(async () => {
  if (missing) return
  const base = testSettings(join(dir.path, 'cache'), {apiKey: KEY})
  server = await start(fakeEngine(), base)
  proxy = await startNginx(server.base)
  browser = await launchChromium()
})

test.after(async () => {
  await browser?.close()
  if (nginx && nginx.exitCode === null) {
    const exited = new Promise((r) => nginx?.once('exit', r))
    nginx.kill()
    await exited
  }
  await server?.stop()
  dir.remove()
})

testUnless(missing, 'under the prefix /mod/, /docs/ lands on /mod/docs, which loads every file and the document through the prefix, and Try it out calls /mod/v1/…', async () => {
  const tab = await browser.newPage({viewport: {width: 1280, height: 900}})
  const answers: string[] = []
  tab.on('response', (r) => answers.push(`${r.status()} ${r.url().slice(proxy.length)}`))
  const icon = tab.waitForResponse((r) => r.url().includes('favicon'))
  const res = await tab.goto(`${proxy}/mod/docs/`)
  assert.equal([res?.status(), tab.url()], [200, `${proxy}/mod/docs`])
  await tab.waitForSelector('.opblock', {timeout: 30_000})
  await icon
  assert.equal(answers.map((a) => a.replace(/\?v=.*/, '?v=…')).sort(), [
    '200 /mod/docs',
    '200 /mod/docs/favicon-32x32.png?v=…',
    '200 /mod/docs/index.css?v=…',
    '200 /mod/docs/init.js?v=…',
    '200 /mod/docs/swagger-ui-bundle.js?v=…',
    '200 /mod/docs/swagger-ui-standalone-preset.js?v=…',
    '200 /mod/docs/swagger-ui.css?v=…',
    '200 /mod/openapi.json',
    '301 /mod/docs/',
  ])

  await tab.click('.btn.authorize')
  await tab.fill('.auth-container input', KEY)
  await tab.click('.auth-container .btn.modal-btn.auth.authorize')
  await tab.click('.auth-btn-wrapper .btn-done')
  await tab.click('#operations-policy-listCategories .opblock-summary')
  const answer = tab.waitForResponse((r) => r.url().includes('/v1/categories'))
  await tab.click('#operations-policy-listCategories .execute')
  const call = await answer
  assert.equal([call.url(), call.status()], [`${proxy}/mod/v1/categories`, 200])
  // The page shows the same address in its Request URL and curl command.
  await tab.waitForSelector('#operations-policy-listCategories .request-url')
  const shown = (await tab.evaluate(`document.querySelector('#operations-policy-listCategories .request-url pre').innerText`)) as string
  assert.is(shown.trim(), `${proxy}/mod/v1/categories`)
  await tab.close()
})

test.run()

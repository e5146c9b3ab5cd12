// The /docs page in headless chromium, on a server with MOD_API_KEY set: the page loads without the key, the
// first operation is near the top (the reference tables come after the operations), an open operation fits a
// phone, the console has no warning or error with every operation open, files upload from the page, the Authorize
// button's key is sent with the calls made from the page, and an image job's NDJSON results are shown as the lines
// they are.
import {mkdirSync} from 'node:fs'
import {join} from 'node:path'

import type {Browser, Page} from 'playwright-core'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {launchChromium} from '../helpers/chromium.js'
import {fakeEngine, start, tempDir, testSettings, type Running} from './harness.js'

const KEY = 'docs-page-key'
const dir = tempDir('mod-server-docs-page-')
let server: Running
let browser: Browser

test.before(async () => {
  const storage = join(dir.path, 'jobs')
  mkdirSync(storage)
  const base = testSettings(join(dir.path, 'cache'), {apiKey: KEY})
  server = await start(fakeEngine(), {...base, jobs: {...base.jobs, storage}})
  browser = await launchChromium()
})

test.after(async () => {
  await browser.close()
  await server.stop()
  dir.remove()
})

test('with a key configured, /docs loads without it (every file 200, its icon too, no /favicon.ico) and shows the first operation near the top, the tables below the operations; on a phone the tables scroll, not the page', async () => {
  const tab = await browser.newPage({viewport: {width: 1280, height: 900}})
  const problems = consoleProblems(tab)
  const keyed: string[] = []
  const asked: string[] = []
  tab.on('request', (r) => r.headers()['x-api-key'] !== undefined && keyed.push(r.url()))
  tab.on('response', (r) => asked.push(`${r.status()} ${new URL(r.url()).pathname}`))
  // The page names its icon, so the browser takes it from there and does not ask for /favicon.ico (a 404).
  const icon = tab.waitForResponse((r) => r.url().includes('/favicon'))
  const res = await tab.goto(`${server.base}/docs`)
  assert.is(res?.status(), 200)
  await tab.waitForSelector('.opblock', {timeout: 30_000})
  const favicon = await icon
  assert.equal([new URL(favicon.url()).pathname, favicon.status(), favicon.headers()['content-type']], ['/docs/favicon-32x32.png', 200, 'image/png'])
  assert.equal(asked.filter((a) => !a.startsWith('200 ')), [])
  // A string, not a function: tsx would wrap a function's inner helpers in a name helper the page lacks.
  const layout = (await tab.evaluate(`(() => {
    const top = (el) => (el ? el.getBoundingClientRect().top + window.scrollY : -1)
    const headings = [...document.querySelectorAll('.info h1, .info h2')]
    const heading = (text) => headings.find((h) => h.textContent.trim() === text) ?? null
    return {
      firstOperation: top(document.querySelector('.opblock')),
      lastOperation: top([...document.querySelectorAll('.opblock')].at(-1) ?? null),
      limits: top(heading('Limits on this server')),
      errors: top(heading('Errors')),
      authentication: top(heading('Authentication')),
      authorize: document.querySelector('.btn.authorize') !== null,
    }
  })()`)) as {firstOperation: number; lastOperation: number; limits: number; errors: number; authentication: number; authorize: boolean}
  assert.equal(problems, [])
  assert.equal(keyed, [])
  assert.ok(layout.authentication > 0, JSON.stringify(layout))
  assert.ok(layout.firstOperation > 0 && layout.firstOperation < 900, `first operation at ${layout.firstOperation} px`)
  assert.ok(layout.limits > layout.lastOperation && layout.errors > layout.limits, JSON.stringify(layout))
  assert.ok(layout.authorize)
  // On a 360 px wide screen the page does not scroll sideways: the wide reference tables scroll on their own.
  await tab.setViewportSize({width: 360, height: 640})
  const widths = (await tab.evaluate(`({page: document.documentElement.scrollWidth, table: Math.max(...[...document.querySelectorAll('#limits-formats-and-errors table')].map((t) => t.scrollWidth))})`)) as {page: number; table: number}
  assert.is(widths.page, 360, JSON.stringify(widths))
  assert.ok(widths.table > 360, JSON.stringify(widths))
  await tab.close()
})

/** Opens /docs in `tab` and enters the key with the Authorize button, as a person does before a call. */
async function openAuthorized(tab: Page): Promise<void> {
  await tab.goto(`${server.base}/docs`)
  await tab.click('.btn.authorize')
  await tab.fill('.auth-container input', KEY)
  await tab.click('.auth-container .btn.modal-btn.auth.authorize')
  await tab.click('.auth-btn-wrapper .btn-done')
}

/** What the page printed to the console as a warning or an error, and its uncaught errors. */
function consoleProblems(tab: Page): string[] {
  const problems: string[] = []
  tab.on('pageerror', (e) => problems.push(`uncaught: ${e.message}`))
  tab.on('console', (m) => ['warning', 'error'].includes(m.type()) && problems.push(`${m.type()}: ${m.text()}`))
  return problems
}

test('on a 375 px phone an open operation fits the screen: the page does not scroll sideways, the responses table scrolls on its own; with every operation open the console has no warning or error', async () => {
  const tab = await browser.newPage({viewport: {width: 375, height: 800}})
  const problems = consoleProblems(tab)
  await tab.goto(`${server.base}/docs`)
  await tab.waitForSelector('.opblock', {timeout: 30_000})
  // Every operation open: those with parameters have the Cancel and Reset buttons, all have a responses table.
  const ids = (await tab.evaluate(`[...document.querySelectorAll('.opblock')].map((o) => o.id)`)) as string[]
  // Opened in one go from the page: clicking each through playwright (scrolled to, checked, waited for) took about
  // 2 s more; the rest is Swagger UI resolving each operation's schemas as it opens.
  await tab.evaluate(`[...document.querySelectorAll('.opblock .opblock-summary-control')].forEach((s) => s.click())`)
  // Swagger UI draws every open operation again as another opens: all of them together took past playwright's 30 s
  // default on a slow 2-core machine beside the suite, when each also resolved the whole document on its own.
  await tab.waitForSelector('#operations-moderation-moderateVideo .try-out__btn.reset', {timeout: 120_000})
  const widths = (await tab.evaluate(`({page: document.documentElement.scrollWidth, scrolling: [...document.querySelectorAll('.responses-table')].some((t) => t.scrollWidth > t.clientWidth), open: document.querySelectorAll('.opblock.is-open').length})`)) as {page: number; scrolling: boolean; open: number}
  assert.is(widths.open, ids.length, JSON.stringify(widths))
  assert.is(widths.page, 375, JSON.stringify(widths))
  assert.ok(widths.scrolling, JSON.stringify(widths))
  // Every schema shown too, under Schemas.
  await tab.evaluate(`[...document.querySelectorAll('.models .model-box-control')].forEach((b) => b.click())`)
  await tab.waitForTimeout(500)
  assert.equal(problems, [])
  await tab.close()
})

test('after the first operation, each part the page resolves is its part of the document resolved once, as Swagger UI itself resolves it; a part with no reference outside the paths is itself', async () => {
  const tab = await browser.newPage({viewport: {width: 1280, height: 900}})
  const problems = consoleProblems(tab)
  await tab.goto(`${server.base}/docs`)
  await tab.waitForSelector('.opblock', {timeout: 30_000})
  // Strings, not functions: see the first test. `ui` is the page's Swagger UI; asked with an empty document, the
  // page's resolver answers from the page's own (Swagger UI's would find nothing there).
  const options = `({baseDoc: String(new URL(ui.specSelectors.url(), document.baseURI)), useCircularStructures: false})`
  // Before any operation has opened, the security schemes (no reference in them) are answered as they are.
  const schemes = await tab.evaluate(`ui.fn.resolveSubtree({}, ['components', 'securitySchemes'], ${options}).then((r) => JSON.stringify(r))`)
  const document = (await (await fetch(`${server.base}/openapi.json`)).json()) as {components: {securitySchemes: unknown}}
  assert.is(schemes, JSON.stringify({spec: document.components.securitySchemes, errors: []}))
  await tab.click('#operations-moderation-moderateImage .opblock-summary-control')
  await tab.waitForSelector('#operations-moderation-moderateImage .responses-table', {timeout: 30_000})
  // A second operation opened resolves the whole document, if the page has not in its idle time already.
  await tab.click('#operations-policy-listCategories .opblock-summary-control')
  await tab.waitForSelector('#operations-policy-listCategories .responses-table', {timeout: 60_000})
  const paths = (await tab.evaluate(`(() => {
    const spec = ui.specSelectors.specJS()
    const ops = Object.entries(spec.paths).flatMap(([p, item]) => Object.keys(item).filter((m) => m !== 'parameters').map((m) => ['paths', p, m]))
    return [...ops, ['components', 'securitySchemes'], ...Object.keys(spec.components.schemas).map((n) => ['components', 'schemas', n])]
  })()`)) as string[][]
  assert.ok(paths.length > 20, JSON.stringify(paths))
  // Swagger UI's own resolver, without the page's plugins: the whole document once, and two parts on their own.
  const own = `SwaggerUIBundle.plugins.SwaggerClient({configs: {}, getConfigs: () => ui.getConfigs()}).fn.resolveSubtree`
  const compared = (await tab.evaluate(`(async () => {
    const resolve = ${own}
    const whole = await resolve(ui.specSelectors.specJS(), [], ${options})
    const answers = []
    for (const path of ${JSON.stringify(paths)}) {
      const mine = await ui.fn.resolveSubtree({}, path, ${options})
      answers.push([path.join(' '), JSON.stringify(mine.spec), JSON.stringify(path.reduce((part, key) => part?.[key], whole.spec) ?? null), JSON.stringify(mine.errors)])
    }
    for (const path of [['paths', '/v1/moderate', 'post'], ['components', 'schemas', 'ModerationResult']]) {
      const alone = await resolve(ui.specSelectors.specJS(), path, ${options})
      answers.push(['alone ' + path.join(' '), JSON.stringify(alone.spec), JSON.stringify(path.reduce((part, key) => part?.[key], whole.spec)), JSON.stringify(alone.errors)])
    }
    // A part the document lacks: null from both.
    const lacking = ['components', 'schemas', 'NoSuchSchema']
    const theirs = await resolve(ui.specSelectors.specJS(), lacking, ${options})
    const mine = await ui.fn.resolveSubtree({}, lacking, ${options})
    answers.push(['lacking', JSON.stringify([mine.spec, mine.errors]), JSON.stringify([theirs.spec, theirs.errors]), '[]'])
    return answers
  })()`)) as [string, string, string, string][]
  for (const [path, mine, theirs, errors] of compared) {
    assert.ok(path === 'lacking' ? mine === '[null,[]]' : mine !== 'null' && mine !== undefined, `${path}: ${mine}`)
    assert.is(mine, theirs, path)
    assert.is(errors, '[]', path)
  }
  assert.equal(problems, [])
  await tab.close()
})

test('the upload fields of several files take files from the page (a file input per item), with no warning in the console', async () => {
  const tab = await browser.newPage({viewport: {width: 1280, height: 900}})
  const problems = consoleProblems(tab)
  await openAuthorized(tab)
  const op = '#operations-moderation-moderateBatch'
  await tab.click(`${op} .opblock-summary`)
  // The field shows one file input; a second item adds another.
  const inputs = tab.locator(`${op} [data-property-name=files] input[type=file]`)
  await tab.click(`${op} [data-property-name=files] .json-schema-form-item-add`)
  assert.is(await inputs.count(), 2)
  const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC', 'base64')
  await inputs.nth(0).setInputFiles({name: 'one.png', mimeType: 'image/png', buffer: png})
  await inputs.nth(1).setInputFiles({name: 'two.png', mimeType: 'image/png', buffer: png})
  const answer = tab.waitForResponse((r) => r.url().endsWith('/v1/moderate/batch'))
  await tab.click(`${op} .execute`)
  const res = await answer
  assert.is(res.status(), 200, await res.text())
  assert.equal(((await res.json()) as {results: {source: string}[]}).results.map((r) => r.source), ['one.png', 'two.png'])
  assert.equal(problems, [])
  await tab.close()
})

test("the Authorize button's key is sent with a call made from the page, kept by no browser storage (one an earlier version stored is removed), and gone after a reload", async () => {
  // The storage as an earlier version, which persisted the key, left it.
  const earlier = {name: 'authorized', value: JSON.stringify({ApiKey: {name: 'ApiKey', value: 'stored-earlier'}})}
  const context = await browser.newContext({viewport: {width: 1280, height: 900}, storageState: {cookies: [], origins: [{origin: server.base, localStorage: [earlier]}]}})
  const tab = await context.newPage()
  await tab.goto(`${server.base}/docs`)
  await tab.waitForSelector('.btn.authorize')
  await tab.click('.btn.authorize')
  await tab.fill('.auth-container input[type=text], .auth-container input[type=password]', KEY)
  await tab.click('.auth-container .btn.modal-btn.auth.authorize')
  await tab.click('.auth-btn-wrapper .btn-done')
  const call = async () => {
    await tab.click('#operations-policy-listCategories .opblock-summary')
    const answer = tab.waitForResponse((r) => r.url().endsWith('/v1/categories'))
    await tab.click('#operations-policy-listCategories .execute')
    return answer
  }
  const res = await call()
  assert.is(res.request().headers()['x-api-key'], KEY)
  assert.is(res.status(), 200)
  const storage = JSON.stringify((await context.storageState()).origins)
  assert.not.ok(storage.includes(KEY), storage)
  assert.not.ok(storage.includes('stored-earlier'), storage)
  // Loaded again the page has no key: a call goes without it. (Not reload(): the address now names the operation,
  // which would open already, and the click meant to open it would close it.)
  await tab.goto(`${server.base}/docs`)
  const again = await call()
  assert.is(again.request().headers()['x-api-key'], undefined)
  assert.is(again.status(), 401)
  await context.close()
})

test("an image job's NDJSON results, read from the page, are shown line by line, not as JSON that could not be parsed", async () => {
  // A job of two images, made outside the page; a 1x1 PNG each.
  const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC', 'base64')
  const form = new FormData()
  for (const name of ['a.png', 'b.png']) form.append('files', new Blob([png], {type: 'image/png'}), name)
  const created = await fetch(`${server.base}/v1/jobs/images`, {method: 'POST', headers: {'X-API-Key': KEY}, body: form})
  assert.is(created.status, 202)
  const {id} = (await created.json()) as {id: string}
  for (let i = 0; i < 100; i++) {
    const job = (await (await fetch(`${server.base}/v1/jobs/${id}`, {headers: {'X-API-Key': KEY}})).json()) as {status: string}
    if (job.status === 'done') break
    await new Promise((r) => setTimeout(r, 50))
  }
  const tab = await browser.newPage({viewport: {width: 1280, height: 900}})
  await openAuthorized(tab)
  const op = '#operations-jobs-getImageJobResults'
  await tab.click(`${op} .opblock-summary`)
  await tab.fill(`${op} tr[data-param-name=id] input`, id)
  const answer = tab.waitForResponse((r) => r.url().includes('/results'))
  await tab.click(`${op} .execute`)
  const res = await answer
  assert.is(res.headers()['x-mod-job-status'], 'done')
  const body = await res.text()
  assert.is(body.trim().split('\n').length, 2)
  await tab.waitForSelector(`${op} .live-responses-table tr.response .response-col_description`)
  const shown = (await tab.evaluate(`document.querySelector(${JSON.stringify(`${op} .live-responses-table tr.response .response-col_description`)}).innerText`)) as string
  assert.not.match(shown, /can't parse JSON/)
  for (const line of body.trim().split('\n')) assert.ok(shown.includes(line), `${line} not in ${shown}`)
  await tab.close()
})

test.run()

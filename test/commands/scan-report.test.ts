// `mod scan --report page.html`: one offline page of the flagged and failed items, checked in headless chromium:
// nothing is fetched, the boxes sit on the thumbnail where the JSON result says, the chips filter, and a report of
// 5 000 items builds its cards a page at a time.
import {statSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {pathToFileURL} from 'node:url'

import {chromium, type Browser} from 'playwright-core'
import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {CARDS_PER_PAGE, renderScanReport, type HtmlItem} from '../../src/cli/reports/html.js'
import {thumbnail} from '../../src/cli/reports/thumbnail.js'
import {ROOT, runInProcess, solidPng, tempDir, TOY_MODEL} from '../helpers/cli.js'
import {renderText} from '../helpers/render-text.js'

const dir = tempDir()
const env = {MOD_MODEL_DIR: TOY_MODEL, MOD_CACHE_DIR: join(dir.path, 'cache'), MOD_THREADS: '1'}
let browser: Browser

test.before(async () => {
  const img = await renderText(700, 300, [{text: 'contact: rentals@lakeside.org', x: 30, y: 150, size: 30, font: 'Liberation Serif'}], '#cfe3f0')
  writeFileSync(join(dir.path, 'sign.png'), await sharp(img.data, {raw: {width: img.width, height: img.height, channels: 3}}).png().toBuffer())
  writeFileSync(join(dir.path, 'red.png'), await solidPng(255, 0, 0, 90, 60))
  writeFileSync(join(dir.path, 'blue.png'), await solidPng(0, 0, 255))
  writeFileSync(join(dir.path, 'broken.png'), 'not an image')
  writeFileSync(
    join(dir.path, 'policy.yaml'),
    'categories:\n  redness:\n    prompts: ["red"]\ntext:\n  rules:\n    contacts:\n      category: contact_info\n      detect: [email]\n',
  )
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  })
})

test.after(async () => {
  await browser?.close()
  dir.remove()
})

async function open(page: string) {
  const tab = await browser.newPage({viewport: {width: 1200, height: 900}})
  const problems: string[] = []
  const requests: string[] = []
  tab.on('console', (m) => m.type() === 'error' && problems.push(m.text()))
  tab.on('pageerror', (e) => problems.push(e.message))
  tab.on('request', (req) => !req.url().startsWith('data:') && requests.push(req.url()))
  await tab.goto(pathToFileURL(page).href)
  return {tab, problems, requests}
}

test('the report opens offline and draws each text hit on the thumbnail where the JSON result puts it', async () => {
  const page = join(dir.path, 'report.html')
  const r = await runInProcess(['scan', 'blue.png', 'broken.png', 'red.png', 'sign.png', '--config', 'policy.yaml', '--json', '--report', page], {env, cwd: dir.path})
  assert.is(r.code, 1, r.stderr)
  assert.is(r.stderr, `mod: report: wrote 3 flagged or failed items to ${page}\n`)
  const sign = (JSON.parse(r.stdout) as {source: string; text_hits?: {box: number[]}[]}[]).find((x) => x.source === 'sign.png')
  const hitBox = sign?.text_hits?.[0]?.box as number[]
  assert.is(hitBox.length, 4)
  const {tab, problems, requests} = await open(page)
  try {
    const cards = await tab.$$eval('.card', (els) => els.map((e) => [e.getAttribute('data-source'), e.querySelector('.v')?.textContent]))
    assert.equal(cards, [
      ['broken.png', 'ERROR'],
      ['red.png', 'UNSAFE'],
      ['sign.png', 'UNSAFE'],
    ])
    const drawn = await tab.$eval('.card[data-source="sign.png"]', (card) => {
      const img = (card.querySelector('.thumb img') as HTMLImageElement).getBoundingClientRect()
      const rect = card.querySelector('rect.hit') as SVGRectElement
      const on = rect.getBoundingClientRect()
      const viewBox = (card.querySelector('svg') as SVGSVGElement).viewBox.baseVal
      return {
        attrs: ['x', 'y', 'width', 'height'].map((a) => Number(rect.getAttribute(a))),
        viewBox: [viewBox.width, viewBox.height],
        // The box on screen, in the image's pixels.
        onImage: [(on.left - img.left) * (viewBox.width / img.width), (on.top - img.top) * (viewBox.height / img.height), on.width * (viewBox.width / img.width), on.height * (viewBox.height / img.height)],
      }
    })
    assert.equal(drawn.attrs, hitBox)
    assert.equal(drawn.viewBox, [700, 300])
    // Within the stroke's width of where the JSON says.
    drawn.onImage.forEach((v, i) => assert.ok(Math.abs(v - hitBox[i]) <= 6, `${drawn.onImage} vs ${hitBox}`))
    await tab.click('.chip[data-filter="contact_info"]')
    assert.equal(await tab.$$eval('.card', (els) => els.map((e) => e.getAttribute('data-source'))), ['sign.png'])
    assert.is(await tab.textContent('#shown'), '1')
    assert.equal(problems, [])
    assert.equal(requests, [pathToFileURL(page).href])
  } finally {
    await tab.close()
  }
})

test('a report of 5 000 items opens with one page of cards and builds more as the reader scrolls; about 4 KB an item', async () => {
  const thumb = await thumbnail(join(ROOT, 'test', 'fixtures', 'photos', 'coffee.jpg'), {maxBytes: 1 << 25, maxPixels: 1e8})
  assert.ok(thumb)
  const items: HtmlItem[] = Array.from({length: 5000}, (_, i) => ({
    accepted: false,
    thumb,
    item: {
      source: `photos/${String(i).padStart(4, '0')}.jpg`,
      is_safe: false,
      violations: [{name: i % 2 ? 'weapons' : 'drugs', confidence: 0.9, parent: null, threshold: 0.5}],
      labels: [{name: i % 2 ? 'weapons' : 'drugs', score: 0.9, threshold: 0.5, parent: null, violated: true, origin: 'builtin'}],
      not_evaluated: [],
    },
  }))
  const page = join(dir.path, 'big.html')
  writeFileSync(page, renderScanReport(items, {summary: '5000 scanned: 0 safe, 5000 unsafe, 0 errors', version: 'test', categories: 11, generated: 'now'}))
  const perItem = statSync(page).size / items.length
  console.log(`report size: ${(statSync(page).size / 1e6).toFixed(1)} MB for 5000 items, ${(perItem / 1024).toFixed(1)} KiB an item (one thumbnail of ${thumb.uri.length} characters)`)
  const {tab, problems} = await open(page)
  try {
    assert.is(await tab.textContent('#shown'), '5000')
    assert.is(await tab.$$eval('.card', (els) => els.length), CARDS_PER_PAGE)
    await tab.evaluate(() => window.scrollTo(0, document.body.scrollHeight))
    await tab.waitForFunction((n) => document.querySelectorAll('.card').length >= 2 * n, CARDS_PER_PAGE)
    await tab.click('.chip[data-filter="weapons"]')
    assert.is(await tab.textContent('#shown'), '2500')
    assert.is(await tab.$$eval('.card', (els) => els.length), CARDS_PER_PAGE)
    assert.is(await tab.$eval('.card', (e) => e.getAttribute('data-source')), 'photos/0001.jpg')
    assert.equal(problems, [])
  } finally {
    await tab.close()
  }
})

test.run()

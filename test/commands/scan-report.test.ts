// `mod scan --report page.html`: one offline page to review the flagged and failed items, checked in headless
// chromium: it fetches nothing, shows each flagged item's thumbnail with the boxes where the JSON result puts them
// (an EXIF-rotated photo included) and its path relative to the working folder, sorts, searches and filters, has
// every thumbnail loaded before anything scrolls (so it prints whole) with 5 000 items, and turns keyboard marks
// into a labels file that mod calibrate and mod eval read.
import {spawnSync} from 'node:child_process'
import {existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync} from 'node:fs'
import {basename, join} from 'node:path'
import {pathToFileURL} from 'node:url'

import type {Browser, Page} from 'playwright-core'
import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {openHtmlReport} from '../../src/cli/reports/html-report.js'
import type {ModerationResult} from '../../src/lib/types.js'
import {launchChromium} from '../helpers/chromium.js'
import {BIN, runInProcess, tempDir, TOY_MODEL} from '../helpers/cli.js'
import {noisyPng, writeImages} from '../helpers/dataset.js'
import {renderText} from '../helpers/render-text.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const dir = tempDir()
const env = {MOD_MODEL_DIR: TOY_MODEL, MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache')), MOD_THREADS: '1'}
const folder = join(dir.path, 'uploads')
const policy = join(dir.path, 'policy.yaml')
const page = join(dir.path, 'report.html')
let browser: Browser
/** The --json results of the scan that wrote the report. */
let json: ModerationResult[] = []

test.before(async () => {
  const img = await renderText(700, 300, [{text: 'contact: rentals@lakeside.org', x: 30, y: 150, size: 30, font: 'Liberation Serif'}], '#cfe3f0')
  const sign = sharp(img.data, {raw: {width: img.width, height: img.height, channels: 3}})
  mkdirSync(folder)
  writeFileSync(join(folder, 'a-sign.png'), await sign.clone().png().toBuffer())
  // Stored a quarter turn back, with EXIF orientation 6 to show it upright: its boxes are in upright pixels.
  writeFileSync(join(folder, 'b-sign-rotated.jpg'), await sign.clone().rotate(-90).jpeg({quality: 95}).withMetadata({orientation: 6}).toBuffer())
  writeFileSync(join(folder, 'c-red.png'), await sharp({create: {width: 320, height: 200, channels: 3, background: '#ff0000'}}).png().toBuffer())
  writeFileSync(join(folder, 'd-blue.png'), await sharp({create: {width: 320, height: 200, channels: 3, background: '#0000ff'}}).png().toBuffer())
  writeFileSync(join(dir.path, 'broken.jpg'), Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(200, 7)]))
  writeFileSync(policy, 'categories:\n  redness:\n    prompts: ["red"]\ntext:\n  rules:\n    contacts:\n      category: contact_info\n      detect: [email]\n')
  browser = await launchChromium()
})

test.after(async () => {
  await browser?.close()
  dir.remove()
})

/** Opens a page offline, recording every request and every console error. */
async function open(file: string): Promise<{tab: Page; requests: string[]; problems: string[]}> {
  const tab = await browser.newPage({viewport: {width: 1200, height: 900}})
  const requests: string[] = []
  const problems: string[] = []
  tab.on('request', (r) => requests.push(r.url().slice(0, 200)))
  tab.on('console', (m) => m.type() === 'error' && problems.push(m.text()))
  tab.on('pageerror', (e) => problems.push(e.message))
  await tab.goto(pathToFileURL(file).href)
  return {tab, requests, problems}
}

test('--report writes the flagged and failed items; stdout and the exit code are those of the scan', async () => {
  // Left by a run killed before its rename (a process that is gone), and one of a run still going (this process).
  const gone = spawnSync('true').pid
  const killed = `${page}.${gone}.0badcafe.tmp`
  const running = `${page}.${process.pid}.600dcafe.tmp`
  writeFileSync(killed, '<!doctype html>')
  writeFileSync(running, '<!doctype html>')
  const r = await runInProcess(['scan', 'uploads', 'broken.jpg', '--config', policy, '--report', page, '--json'], {env, cwd: dir.path})
  assert.is(r.code, 1, r.stderr)
  json = JSON.parse(r.stdout)
  assert.equal(
    (json as {source: string; is_safe?: boolean}[]).map((x) => [x.source.replace(`${dir.path}/`, ''), x.is_safe ?? 'error']),
    [
      ['uploads/a-sign.png', false],
      ['uploads/b-sign-rotated.jpg', false],
      ['uploads/c-red.png', false],
      ['uploads/d-blue.png', true],
      ['broken.jpg', 'error'],
    ],
  )
  assert.ok(existsSync(page))
  assert.equal(readdirSync(dir.path).filter((f) => f.endsWith('.tmp')), [basename(running)])
  rmSync(running)
})

test('the page opens offline and draws each text box where the JSON puts it, on the upright thumbnail', async () => {
  const {tab, requests, problems} = await open(page)
  try {
    await tab.waitForFunction(() => [...document.querySelectorAll('img')].every((i) => i.complete && i.naturalWidth > 0))
    const shown = await tab.evaluate(() =>
      [...document.querySelectorAll('article.item')].map((a) => {
        const fig = a.querySelector('figure') as HTMLElement
        const f = fig.getBoundingClientRect()
        const img = a.querySelector('img')
        return {
          source: (a as HTMLElement).dataset.source ?? '',
          verdict: a.querySelector('.verdict')?.textContent ?? '',
          image: img ? [img.naturalWidth, img.naturalHeight] : null,
          figure: [f.width, f.height],
          hits: [...a.querySelectorAll('.box.hit')].map((b) => {
            const r = b.getBoundingClientRect()
            return [r.left - f.left, r.top - f.top, r.width, r.height]
          }),
        }
      }),
    )
    assert.equal(problems, [])
    assert.equal(requests, [pathToFileURL(page).href])
    // Paths as given, relative to the folder the scan ran in.
    assert.equal(
      shown.map((s) => [s.source, s.verdict.split(':')[0]]),
      [
        ['uploads/a-sign.png', 'UNSAFE'],
        ['uploads/b-sign-rotated.jpg', 'UNSAFE'],
        ['uploads/c-red.png', 'UNSAFE'],
        ['broken.jpg', 'ERROR unsupported_media'],
      ],
    )
    // Both signs are shown upright (wider than tall), and each hit box sits where the JSON's box is, scaled.
    for (const [i, s] of shown.slice(0, 2).entries()) {
      const result = json[i]
      assert.ok(s.image && s.image[0] > s.image[1], `${s.source} is upright`)
      const scale = s.figure[0] / 700
      assert.is(s.hits.length, result.text_hits?.length)
      assert.ok(s.hits.length > 0)
      s.hits.forEach((h, k) => {
        const box = result.text_hits?.[k].box ?? []
        h.forEach((v, j) => assert.ok(Math.abs(v - box[j] * scale) < 1.5, `${s.source} box ${k}: ${h} vs ${box} x ${scale}`))
      })
    }
    assert.equal(await tab.locator('article.item h2').allTextContents(), ['uploads/a-sign.png', 'uploads/b-sign-rotated.jpg', 'uploads/c-red.png', 'broken.jpg'])
    // Every category's score is shown, the violated one marked.
    assert.equal(await tab.locator('article.item').nth(2).locator('tr.over td:first-child').allTextContents(), ['redness'])
    assert.is(await tab.locator('article.item').nth(2).locator('table.scores tr').count(), json[2].labels.length)
    // The filter keeps the items flagged for a category, or the errors.
    await tab.selectOption('#show', 'category:contact_info')
    assert.is(await tab.locator('article.item').count(), 2)
    await tab.selectOption('#show', 'error')
    assert.is(await tab.locator('article.item').count(), 1)
  } finally {
    await tab.close()
  }
})

test('5 000 items: every one laid out with its thumbnail loaded before anything scrolls; sort and search', async () => {
  const big = join(dir.path, 'big.html')
  const report = await openHtmlReport(big, dir.path)
  const jpeg = await sharp({create: {width: 240, height: 160, channels: 3, background: '#884422'}})
    .composite([{input: Buffer.from('<svg width="240" height="160"><circle cx="120" cy="80" r="60" fill="#ddaa77"/></svg>')}])
    .jpeg({quality: 70})
    .toBuffer()
  const labels = ['weapons', 'gore', 'drugs']
  for (let i = 0; i < 5000; i++) {
    const name = labels[i % 3]
    // Scores from 0.50 to 0.99, highest at i = 49, 149, ...
    const score = 0.5 + (i % 50) / 100
    const result: ModerationResult = {
      source: join(dir.path, 'photos', `${String(i).padStart(5, '0')}.jpg`),
      is_safe: false,
      violations: [{name, confidence: score, parent: null, threshold: 0.5}],
      labels: [{name, score, threshold: 0.5, parent: null, violated: true, origin: 'builtin'}],
      not_evaluated: [],
      ...(i === 0 ? {regions: [{label: 'BELLY_EXPOSED', score: 0.8, box: [240, 400, 960, 800]}]} : {}),
    }
    await report.add(result, {jpeg, width: 2400, height: 1600})
  }
  await report.close({scanned: 9000, safe: 4000, unsafe: 5000, errors: 0, missing: 0, not_evaluated: [], coverage: '', sampled: 0})
  const perItem = statSync(big).size / 5000
  console.log(`report page: ${(perItem / 1024).toFixed(1)} KB per item (a 240 x 160 thumbnail of ${(jpeg.length / 1024).toFixed(1)} KB)`)
  assert.ok(perItem < 1.5 * jpeg.length + 1024)
  const started = Date.now()
  const {tab, problems} = await open(big)
  try {
    console.log(`report page: 5 000 items opened in ${Date.now() - started} ms`)
    // Right after the load event, nothing scrolled: every item is in the page and every thumbnail decoded, as
    // printing needs.
    const state = await tab.evaluate(() => {
      const imgs = [...document.querySelectorAll('img')]
      return {items: document.querySelectorAll('article.item').length, imgs: imgs.length, loaded: imgs.filter((i) => i.complete && i.naturalWidth > 0).length, lazy: imgs.filter((i) => i.loading === 'lazy' || !i.src).length}
    })
    assert.equal(state, {items: 5000, imgs: 5000, loaded: 5000, lazy: 0})
    // A region's box, in the 2400 x 1600 image's pixels, drawn at the same place on the 240 px thumbnail.
    const region = await tab.evaluate(() => {
      const f = (document.querySelector('figure') as HTMLElement).getBoundingClientRect()
      const r = (document.querySelector('.box.region') as HTMLElement).getBoundingClientRect()
      return [r.left - f.left, r.top - f.top, r.width, r.height].map((v) => Math.round(v))
    })
    assert.equal(region, [24, 40, 96, 80])
    const first = (n: number) => tab.evaluate((k) => [...document.querySelectorAll('article.item h2')].slice(0, k).map((h) => h.textContent), n)
    assert.equal(await first(2), ['photos/00000.jpg', 'photos/00001.jpg'])
    await tab.selectOption('#sort', 'score')
    assert.equal(await first(3), ['photos/00049.jpg', 'photos/00099.jpg', 'photos/00149.jpg'])
    await tab.fill('#search', 'gore 0004')
    // Every word matches the path or a category; the order stays by score.
    assert.equal(await first(20), ['photos/00049.jpg', 'photos/00046.jpg', 'photos/00043.jpg', 'photos/00040.jpg', 'photos/00004.jpg'])
    await tab.fill('#search', 'gore')
    assert.is(await tab.locator('article.item').count(), 1667)
    assert.match((await tab.locator('#count').textContent()) ?? '', '1667 of 5000 items')
    assert.match((await tab.locator('#show').textContent()) ?? '', 'flagged for gore (1667)')
    assert.equal(problems, [])
  } finally {
    await tab.close()
  }
})

/** The image paths of a report, as its page lists them, with whether each is in the safe sample. */
const entriesOf = (html: string): {path: string; sample: boolean}[] =>
  JSON.parse(/<script id="report-items" type="application\/json">([^]*?)<\/script>/.exec(html)?.[1] ?? '[]').map((e: {path: string; sample?: boolean}) => ({path: e.path, sample: e.sample === true}))

test('the review loop: keyboard marks, kept on reload, downloaded as labels that calibrate turns into the thresholds they say', async () => {
  // On the toy model, redness rises with how far the red channel is above CLIP's mean against the others: reddish
  // and grey images are both flagged at the default threshold, pale and deep cyan ones are not.
  const colours = {red: [200, 115, 110], grey: [128, 128, 128], pale: [110, 160, 170], deep: [0, 200, 200]} as const
  for (const [name, rgb] of Object.entries(colours)) await writeImages(join(dir.path, 'review'), '.', [...rgb], 6, `${name}-`, 1)
  const reviewPolicy = join(dir.path, 'review-policy.yaml')
  // The NSFW specialist is switched off: it has nothing to say on colours, and it is the costly part of scoring them.
  writeFileSync(reviewPolicy, 'specialists: {nsfw: false}\ncategories:\n  redness:\n    prompts: ["red"]\n')
  const scan = (html: string) => runInProcess(['scan', 'review', '--config', reviewPolicy, '--report', html, '--report-sample', '8'], {env, cwd: dir.path})
  assert.is((await scan('review.html')).code, 1)
  // The same images give the same sample of the 12 safe ones.
  assert.is((await scan('again.html')).code, 1)
  const entries = entriesOf(readFileSync(join(dir.path, 'review.html'), 'utf8'))
  assert.equal(entriesOf(readFileSync(join(dir.path, 'again.html'), 'utf8')), entries)
  const sampled = entries.filter((e) => e.sample).map((e) => e.path)
  assert.is(sampled.length, 8)
  assert.ok(sampled.some((p) => p.includes('pale')) && sampled.some((p) => p.includes('deep')), sampled.join(' '))

  // The two labels files downloaded: the first review's, and the second's.
  let falseAlarms = ''
  let missed = ''
  const context = await browser.newContext({viewport: {width: 1200, height: 900}, acceptDownloads: true})
  // Counts the key presses each page of the context receives, before its own listeners: see press() below.
  await context.addInitScript(() => {
    const w = window as unknown as {keysSeen: number}
    w.keysSeen = 0
    window.addEventListener('keydown', () => w.keysSeen++, true)
  })
  const tab = await context.newPage()
  const problems: string[] = []
  tab.on('pageerror', (e) => problems.push(e.message))
  const keysSeen = () => tab.evaluate(() => (window as unknown as {keysSeen: number}).keysSeen)
  // A key pressed on the page, as a person presses it. Two CI runs in about forty marked none of 20 keys (0 of 20
  // marked) with the page in front and its body focused; 45 runs since, alone and beside other pages and load, did
  // not do it again. So a key the page never received is pressed again, up to three times, and a page that receives
  // none says so with its focus. A key it received counts once, whatever the page did with it: the marks below still
  // check what the page does with each key.
  const press = async (key: string): Promise<void> => {
    const before = await keysSeen()
    for (let attempt = 0; attempt < 3; attempt++) {
      await tab.keyboard.press(key)
      if ((await keysSeen()) > before) return
      await tab.bringToFront()
    }
    const state = await tab.evaluate(() => ({focus: document.hasFocus(), visibility: document.visibilityState, active: document.activeElement?.tagName}))
    assert.unreachable(`the page received none of 3 presses of ${key}: ${JSON.stringify(state)}`)
  }
  try {
    await tab.goto(pathToFileURL(join(dir.path, 'review.html')).href)
    const items = tab.locator('article.item')
    const names = () => tab.locator('article.item h2').allTextContents()
    assert.is(await items.count(), 20)
    // Paths relative to the folder the scan ran in.
    assert.ok((await names()).every((n) => /^review\/(red|grey|pale|deep)-\d\.png$/.test(n)), (await names()).join(' '))
    // Sort and search change what is shown, and in what order.
    await tab.selectOption('#sort', 'name')
    const byName = await names()
    assert.equal(byName, [...byName].sort())
    assert.is(byName[0].slice(0, 12), 'review/deep-')
    await tab.selectOption('#sort', 'verdict')
    assert.equal((await names()).slice(0, 12).map((n) => n.replace(/-\d.*/, '')).sort(), [...Array(6).fill('review/grey'), ...Array(6).fill('review/red')])
    await tab.fill('#search', 'grey')
    assert.equal((await names()).sort(), ['review/grey-0.png', 'review/grey-1.png', 'review/grey-2.png', 'review/grey-3.png', 'review/grey-4.png', 'review/grey-5.png'])
    await tab.fill('#search', '')
    await tab.selectOption('#sort', 'name')

    // Keyboard marks, one per item in name order from the first (a mark moves on to the next item): the reddish
    // flags are right, the grey ones false alarms, the sampled safe images right (safe).
    const current = () => tab.evaluate(() => (document.querySelector('article.item.current') as HTMLElement | null)?.dataset.source ?? '')
    // Keys go to the page, not to a control: whichever control has the focus gives it up.
    await tab.evaluate(() => (document.activeElement as HTMLElement | null)?.blur())
    assert.is(await tab.evaluate(() => document.activeElement === document.body), true)
    assert.is(await current(), byName[0])
    for (let i = 0; i < 20; i++) await press((await current()).includes('grey') ? 'f' : 'r')
    const tally = () => tab.locator('#tally').textContent()
    // The page's status line says why a key marked nothing.
    assert.is(await tally(), '20 of 20 marked: 14 right, 6 false alarms, 0 missed', `status: ${await tab.locator('#status').textContent()}`)
    // u undoes the last mark; a key that does not fit the item says so and marks nothing.
    await press('u')
    assert.is(await tally(), '19 of 20 marked: 13 right, 6 false alarms, 0 missed')
    assert.is(await current(), 'review/red-5.png')
    await press('m')
    assert.match((await tab.locator('#status').textContent()) ?? '', 'missed applies to the safe sample')
    await press('r')
    // The marks are shown on the items and kept by a reload. A CI run once found none after the reload (0 of 20
    // marked) in some 60 runs, its marks made just before: a guess, unconfirmed, is that Chromium carries the page's
    // storage writes to its browser process apart from the navigation, so that a reload at once may load the page
    // before they arrive. A person reloads seconds later; the reload waits until another tab of the report shows the
    // marks (at most 5 s), so that what it checks is that they are kept.
    // What the tab's own storage holds after its marks: when the other tab sees none, this says whether the page
    // wrote them at all (a failed write makes the tally say the marks are not kept) or Chromium did not pass them on.
    const wrote = await tab.evaluate(() => Object.keys(localStorage).map((k) => `${k}: ${localStorage.getItem(k)?.length} chars`).join('; '))
    const other = await context.newPage()
    let seen: string | null = ''
    for (let tries = 0; tries < 50; tries++) {
      await other.goto(tab.url())
      seen = await other.locator('#tally').textContent()
      if (seen?.startsWith('20 of 20')) break
      await other.waitForTimeout(100)
    }
    await other.close()
    await tab.reload()
    // Should it fail again: what the other tab last saw, and what the storage holds after the reload.
    const held = await tab.evaluate(() => Object.keys(localStorage).map((k) => `${k}: ${localStorage.getItem(k)?.length} chars`).join('; '))
    assert.is(await tally(), '20 of 20 marked: 14 right, 6 false alarms, 0 missed', `the tab's storage before the reload: ${wrote}; the other tab saw "${seen}"; storage after: ${held}`)
    assert.is(await tab.locator('article.item[data-mark=false_alarm]').count(), 6)
    assert.equal(await tab.locator('article.item[data-source="review/grey-0.png"] .badge').textContent(), 'false alarm')

    // Printing: the controls go, every item and its loaded thumbnail stay.
    await tab.emulateMedia({media: 'print'})
    assert.is(await tab.locator('#controls').isVisible(), false)
    assert.is(await tab.evaluate(() => [...document.querySelectorAll('article.item img')].filter((i) => (i as HTMLImageElement).complete && (i as HTMLImageElement).naturalWidth > 0 && i.getBoundingClientRect().width > 0).length), 20)
    await tab.emulateMedia({media: 'screen'})
    // And Chromium's own Print to PDF holds every thumbnail (an image drawn once per item).
    const pdf = (await tab.pdf()).toString('latin1')
    assert.is(pdf.match(/\/Subtype\s*\/Image/g)?.length, 20)

    const downloads = join(dir.path, 'Downloads')
    const download = async (name: string): Promise<string> => {
      const [file] = await Promise.all([tab.waitForEvent('download'), tab.click('#download')])
      assert.is(file.suggestedFilename(), 'review-labels.csv')
      await file.saveAs(join(downloads, name))
      return join(downloads, name)
    }
    falseAlarms = await download('false-alarms.csv')
    const lines = readFileSync(falseAlarms, 'utf8').split('\n')
    assert.match(lines[0], '# Labels marked in the mod scan report review.html')
    assert.equal(lines.filter((l) => !l.startsWith('#')).slice(0, 1), ['file,labels'])
    const rows = lines.filter((l) => l.startsWith('/'))
    assert.is(rows.length, 20)
    assert.ok(rows.includes(`${join(dir.path, 'review', 'grey-0.png')},safe`))
    assert.ok(rows.includes(`${join(dir.path, 'review', 'red-0.png')},redness`))

    // Second look: the grey flags were right after all, and the sampled pale images were missed (C picks the
    // category before the first in the item's menu: redness, the lowest score, is last).
    await tab.fill('#search', 'grey')
    await tab.locator('#search').blur()
    for (let i = 0; i < 6; i++) await press('r')
    await tab.fill('#search', 'pale')
    await tab.locator('#search').blur()
    const pale = await items.count()
    for (let i = 0; i < pale; i++) {
      await press('Shift+C')
      await press('m')
    }
    assert.is(await tab.locator('article.item[data-mark=missed] .badge').first().textContent(), 'missed: redness')
    assert.is(await tally(), `20 of 20 marked: ${20 - pale} right, 0 false alarms, ${pale} missed`)
    missed = await download('missed.csv')
    assert.ok(readFileSync(missed, 'utf8').includes(`${join(dir.path, sampled.find((p) => p.includes('pale')) as string)},redness`))
    assert.equal(problems, [])
  } finally {
    await context.close()
  }

  // Fresh images of each colour, to see what each calibrated policy flags.
  const fresh = join(dir.path, 'fresh')
  mkdirSync(fresh)
  for (const [name, rgb] of Object.entries(colours)) writeFileSync(join(fresh, `${name}.png`), await noisyPng(rgb[0], rgb[1], rgb[2], 77))
  const flagged = async (config: string): Promise<string[]> => {
    const r = await runInProcess(['scan', fresh, '--config', config, '--json'], {env})
    return (JSON.parse(r.stdout) as ModerationResult[]).filter((x) => !x.is_safe).map((x) => x.source.replace(`${fresh}/`, '').replace('.png', ''))
  }
  assert.equal(await flagged(reviewPolicy), ['grey', 'red'])
  // calibrate and eval run elsewhere: the labels file's absolute paths still find the images.
  const elsewhere = join(dir.path, 'elsewhere')
  mkdirSync(elsewhere)
  const calibrate = async (labels: string, out: string): Promise<string> => {
    const r = await runInProcess(['calibrate', labels, '--config', reviewPolicy, '--max-fpr', '0', '--out', out], {env, cwd: elsewhere})
    assert.is(r.code, 0, r.stderr)
    return join(elsewhere, out)
  }
  // False alarms on the grey flags raise the threshold above them; the reddish images stay flagged.
  const strict = await calibrate(falseAlarms, 'strict.yaml')
  assert.equal(await flagged(strict), ['red'])
  const safeFlagged = async (config: string): Promise<number> => {
    const r = await runInProcess(['eval', falseAlarms, '--config', config, '--json'], {env, cwd: elsewhere})
    assert.is(r.code, 0, r.stderr)
    return JSON.parse(r.stdout).metrics.safe_flagged
  }
  assert.ok((await safeFlagged(reviewPolicy)) > 0.4)
  assert.is(await safeFlagged(strict), 0)
  // Missed pale images lower it below them: they are flagged now, the deep cyan ones still not.
  const loose = await calibrate(missed, 'loose.yaml')
  assert.equal(await flagged(loose), ['grey', 'pale', 'red'])
})

test("two tabs of one report: a mark made in one shows in the other, and neither tab's marks erase the other's", async () => {
  // The report the review loop wrote; a context of its own starts with no marks.
  const report = pathToFileURL(join(dir.path, 'review.html')).href
  const context = await browser.newContext({viewport: {width: 1200, height: 900}})
  try {
    const [a, b] = [await context.newPage(), await context.newPage()]
    await a.goto(report)
    await b.goto(report)
    const mark = (tab: Page, source: string, button: string) => tab.locator(`article.item[data-source="${source}"] button`, {hasText: button}).click()
    const badge = (tab: Page, source: string) => tab.locator(`article.item[data-source="${source}"] .badge`).textContent()
    // Shown in the other tab as it comes, with no reload. Chromium carries a storage write to the other tab through
    // its browser process: on a loaded machine (the suite's other files beside it) it once did not show within 5 s.
    // Waited for up to 20 s; should it fail, what each tab shows and what the other tab's storage holds tell a slow event
    // from a lost one.
    const shows = async (tab: Page, source: string, text: string): Promise<void> => {
      const selector = `article.item[data-source="${source}"] .badge`
      const came = await tab.waitForFunction(([s, t]) => document.querySelector(s)?.textContent === t, [selector, text], {timeout: 20_000}).then(() => true, () => false)
      if (came) return
      const held = await tab.evaluate(() => Object.keys(localStorage).map((k) => `${k}: ${localStorage.getItem(k)}`).join('; '))
      assert.unreachable(`the other tab shows "${await badge(tab, source)}" for ${source} (the marking tab ${await badge(tab === a ? b : a, source)}); its storage: ${held}`)
    }
    await mark(a, 'review/red-0.png', 'right')
    await shows(b, 'review/red-0.png', 'right')
    assert.is(await b.locator('#tally').textContent(), '1 of 20 marked: 1 right, 0 false alarms, 0 missed')
    await mark(b, 'review/grey-0.png', 'false alarm')
    await shows(a, 'review/grey-0.png', 'false alarm')
    for (const tab of [a, b]) {
      await tab.reload()
      assert.is(await tab.locator('#tally').textContent(), '2 of 20 marked: 1 right, 1 false alarm, 0 missed')
      assert.is(await badge(tab, 'review/red-0.png'), 'right')
      assert.is(await badge(tab, 'review/grey-0.png'), 'false alarm')
    }
  } finally {
    await context.close()
  }
})

test('names that would show as other names (a right-to-left override, a line break) are shown escaped, as the terminal shows them, and in the labels file\'s comments', async () => {
  const names = join(dir.path, 'names')
  mkdirSync(names)
  const red = readFileSync(join(folder, 'c-red.png'))
  writeFileSync(join(names, 'invoice\u202egnp.exe'), red)
  writeFileSync(join(names, 'two\nlines.png'), red)
  const out = join(dir.path, 'names.html')
  assert.is((await runInProcess(['scan', 'names', '--config', policy, '--report', out], {env, cwd: dir.path})).code, 1)
  const {tab, problems} = await open(out)
  try {
    const shown = await tab.$$eval('.item h2', (hs) => hs.map((h) => [h.textContent, h.getAttribute('title')]))
    assert.equal(shown, [
      ['names/invoice\\u202egnp.exe', `${names}/invoice\\u202egnp.exe`],
      ['names/two\\x0alines.png', `${names}/two\\x0alines.png`],
    ])
    assert.equal(problems, [])
  } finally {
    await tab.close()
  }
  // Run in a folder whose name holds a line break, the labels' comment names it escaped: the file still reads.
  const broken = join(dir.path, 'line\nbreak')
  mkdirSync(broken)
  const elsewhere = join(dir.path, 'elsewhere.html')
  assert.is((await runInProcess(['scan', join(names, 'invoice\u202egnp.exe'), '--config', policy, '--report', elsewhere], {env, cwd: broken})).code, 1)
  const second = await open(elsewhere)
  try {
    await second.tab.keyboard.press('r')
    const [file] = await Promise.all([second.tab.waitForEvent('download'), second.tab.click('#download')])
    const labels = join(dir.path, 'elsewhere-labels.csv')
    await file.saveAs(labels)
    assert.match(readFileSync(labels, 'utf8'), `# Paths are absolute: the scan ran in ${dir.path}/line\\x0abreak. Use:`)
    const scored = await runInProcess(['eval', labels, '--config', policy, '--json'], {env})
    assert.is(scored.code, 0, scored.stderr)
    assert.is(JSON.parse(scored.stdout).metrics.images, 1)
  } finally {
    await second.tab.close()
  }
})

test('a report that cannot be written whole (a file size limit; a full disk alike): exit 2 saying why, no page and no temporary file left', async () => {
  const place = join(dir.path, 'limited')
  mkdirSync(place)
  // 8 KiB a file, its signal ignored so that a write past it fails (EFBIG), as one on a full disk does (ENOSPC).
  const r = spawnSync('bash', ['-c', 'trap "" XFSZ; ulimit -f 8; exec "$0" "$@"', process.execPath, BIN, 'scan', join(folder, 'c-red.png'), '--config', policy, '--report', 'r.html'], {
    cwd: place,
    env: {...process.env, ...env, NO_COLOR: '1'},
    encoding: 'utf8',
  })
  assert.is(r.status, 2, r.stderr)
  assert.match(r.stderr, 'mod: bad_request: --report r.html: cannot write it: larger than a file may be here (EFBIG)')
  assert.not.match(r.stderr, 'node:')
  assert.equal(readdirSync(place), [])
})

test('--report to a folder that does not exist: exit 2 before scanning, nothing written', async () => {
  const r = await runInProcess(['scan', folder, '--config', policy, '--report', join(dir.path, 'none', 'r.html')], {env})
  assert.is(r.code, 2)
  assert.match(r.stderr, `mod: bad_request: --report ${join(dir.path, 'none', 'r.html')}: cannot write there (ENOENT)`)
  assert.is(r.stdout, '')
})

test('--report naming a folder: exit 2 before scanning, not a failed rename after it', async () => {
  const r = await runInProcess(['scan', folder, '--config', policy, '--report', dir.path], {env})
  assert.is(r.code, 2)
  assert.is(r.stderr, `mod: bad_request: --report ${dir.path}: is a folder; give a file name\n`)
  assert.is(r.stdout, '')
})

test('--report naming a file that is not an HTML page (the first match of a pattern after the flag): exit 2 before scanning, the file kept', async () => {
  const victim = join(folder, 'c-red.png')
  const before = readFileSync(victim)
  const r = await runInProcess(['scan', '--config', policy, '--report', victim, join(folder, 'd-blue.png')], {env})
  assert.is(r.code, 2)
  assert.is(r.stderr, `mod: bad_request: --report ${victim}: the file there is not an HTML page, and a report replaces only a page (a shell pattern after --report names its first match): give a new file name\n`)
  assert.is(r.stdout, '')
  assert.ok(readFileSync(victim).equals(before))
  // An earlier page is replaced, as before.
  const again = join(dir.path, 'again.html')
  writeFileSync(again, '<!doctype html><p>old</p>')
  assert.is((await runInProcess(['scan', join(folder, 'd-blue.png'), '--config', policy, '--report', again], {env})).code, 0)
  assert.match(readFileSync(again, 'utf8'), 'mod scan report')
})

test('--report-sample needs --report, and a count of 0 or more', async () => {
  const alone = await runInProcess(['scan', folder, '--report-sample', '5'], {env})
  assert.is(alone.code, 2)
  assert.match(alone.stderr, /--report-sample[^]*--report/)
  const negative = await runInProcess(['scan', folder, '--report', join(dir.path, 'n.html'), '--report-sample', '-1'], {env})
  assert.is(negative.code, 2)
  assert.is(negative.stderr, 'mod: usage: --report-sample="-1" is not valid: expected a whole number from 0 to 9007199254740991\n')
  assert.not.ok(existsSync(join(dir.path, 'n.html')))
})

test.run()

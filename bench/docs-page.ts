/**
 * docs-page (by hand: `npm run build && npx tsx bench/docs-page.ts [--rounds N]`; Debian's chromium): the /docs page of
 * `mod serve` in headless Chromium, as it is and with Swagger UI's own resolver (the page's init.js served without
 * its `resolvedOnce` plugin), taking turns. Each round opens the page in a fresh context and times the load (to the
 * operations drawn) and the first six operations opened one at a time, 3 s apart, each closed again before the next,
 * with the page's main-thread task time (CDP Performance.getMetrics TaskDuration) over the whole round. No target:
 * the page is not on a request's path; docs/rest.md quotes its figures.
 */
import {parseArgs} from 'node:util'

import {chromium, type Browser, type CDPSession} from 'playwright-core'

import {header, median, ms, startServer, table} from './lib.js'

const {values} = parseArgs({options: {rounds: {type: 'string', default: '3'}}})
const ROUNDS = Number(values.rounds)
const OPERATIONS = 6
const PAUSE_MS = 3000

header('docs-page', '/docs in headless Chromium: load and operations opened, with the page resolver and with Swagger UI own')
const server = await startServer()
const browser: Browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
})

interface Round {
  load: number
  first: number
  later: number[]
  taskSeconds: number
}

/** Seconds the page's main thread has spent in tasks so far. */
async function taskDuration(session: CDPSession): Promise<number> {
  const {metrics} = (await session.send('Performance.getMetrics')) as {metrics: {name: string; value: number}[]}
  return metrics.find((m) => m.name === 'TaskDuration')?.value ?? Number.NaN
}

async function round(own: boolean): Promise<Round> {
  const context = await browser.newContext({viewport: {width: 1280, height: 900}})
  const tab = await context.newPage()
  if (own) {
    await tab.route('**/docs/init.js*', async (route) => {
      const res = await route.fetch()
      const body = (await res.text()).replace(', resolvedOnce]', ']')
      if (!body.includes('binaryStrings]')) throw new Error('init.js no longer names its plugins as this bench expects')
      await route.fulfill({response: res, body})
    })
  }
  const session = await context.newCDPSession(tab)
  await session.send('Performance.enable')
  const before = await taskDuration(session)
  let t = performance.now()
  await tab.goto(`${server.url}/docs`)
  await tab.waitForSelector('.opblock', {timeout: 60_000})
  const load = performance.now() - t
  const ids = (await tab.evaluate(`[...document.querySelectorAll('.opblock')].map((o) => o.id)`)) as string[]
  const opened: number[] = []
  for (const id of ids.slice(0, OPERATIONS)) {
    await tab.waitForTimeout(PAUSE_MS)
    t = performance.now()
    await tab.click(`#${id} .opblock-summary-control`)
    await tab.waitForSelector(`#${id} .responses-table`, {timeout: 60_000})
    opened.push(performance.now() - t)
    await tab.click(`#${id} .opblock-summary-control`)
  }
  const taskSeconds = (await taskDuration(session)) - before
  await context.close()
  return {load, first: opened[0], later: opened.slice(1), taskSeconds}
}

const rounds: Record<'page' | 'own', Round[]> = {page: [], own: []}
try {
  for (let i = 0; i < ROUNDS; i++) {
    for (const side of i % 2 === 0 ? (['page', 'own'] as const) : (['own', 'page'] as const)) rounds[side].push(await round(side === 'own'))
  }
} finally {
  await browser.close()
  await server.stop()
}

const row = (name: string, r: Round[]): string[] => [
  name,
  ms(median(r.map((x) => x.load))),
  ms(median(r.map((x) => x.first))),
  ms(median(r.flatMap((x) => x.later))),
  `${Math.min(...r.flatMap((x) => x.later)).toFixed(0)}-${Math.max(...r.flatMap((x) => x.later)).toFixed(0)} ms`,
  `${median(r.map((x) => x.taskSeconds)).toFixed(2)} s`,
]
table([
  ['resolver', 'load (median)', 'first operation', `operations 2-${OPERATIONS} (median)`, 'their range', 'main-thread tasks a round'],
  row('the page (resolvedOnce)', rounds.page),
  row("Swagger UI's own", rounds.own),
])
const ratio = (f: (r: Round[]) => number): string => (f(rounds.own) / f(rounds.page)).toFixed(2)
console.log(
  `\nSwagger UI's own against the page's: load ${ratio((r) => median(r.map((x) => x.load)))} x, operations 2-${OPERATIONS} ${ratio((r) => median(r.flatMap((x) => x.later)))} x, main-thread tasks ${ratio((r) => median(r.map((x) => x.taskSeconds)))} x (${ROUNDS} rounds each)`,
)

import {execFileSync, spawn} from 'node:child_process'
import {cpSync, readFileSync, readdirSync, renameSync, statSync, symlinkSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {pathToFileURL} from 'node:url'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {launchChromium} from '../helpers/chromium.js'
import {BIN, runInProcess, shellWord, tempDir, TOY_MODEL, writeRednessPolicy} from '../helpers/cli.js'
import {writeImages} from '../helpers/dataset.js'
import {slideshowWebp} from '../helpers/slideshow.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const dir = tempDir()
const env = {MOD_MODEL_DIR: TOY_MODEL, MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache'))}
const RED: [number, number, number] = [240, 20, 20]
const BLUE: [number, number, number] = [20, 20, 240]
let policy = ''
let clean = ''
let mixed = ''

interface LabelRow {
  name: string
  positives: number
  true_positives: number
  false_positives: number
  recall: number | null
  precision: number | null
  safe_fpr: number | null
}

const row = (json: {metrics: {labels: LabelRow[]}}, name: string) => json.metrics.labels.find((l) => l.name === name) as LabelRow

test.before(async () => {
  policy = writeRednessPolicy(dir.path)
  clean = join(dir.path, 'clean')
  await writeImages(clean, 'redness', RED, 4, 'red')
  await writeImages(clean, 'safe', BLUE, 5, 'blue', 1)
  // Mixed: 3 red + 1 blue image labelled redness; 4 blue + 2 red safe images; one red image labelled in
  // labels.csv as redness and weapons; one broken file, a link to an image that is gone, and a FIFO named as an image.
  mixed = join(dir.path, 'mixed')
  await writeImages(mixed, 'redness', RED, 3, 'red', 2)
  await writeImages(mixed, 'redness', BLUE, 1, 'blue', 3)
  await writeImages(mixed, 'safe', BLUE, 4, 'blue', 4)
  await writeImages(mixed, 'safe', RED, 2, 'red', 5)
  await writeImages(mixed, '.', RED, 1, 'multi', 6)
  writeFileSync(join(mixed, 'labels.csv'), 'file,labels\nmulti0.png,redness;weapons\n')
  writeFileSync(join(mixed, 'safe', 'broken.png'), 'not a png')
  symlinkSync(join(dir.path, 'gone.png'), join(mixed, 'redness', 'gone.png'))
  execFileSync('mkfifo', [join(mixed, 'safe', 'pipe.png')])
  await writeImages(mixed, '.', RED, 1, 'stray', 7)
})

test.after(() => dir.remove())

test('under a terminal the progress display stays on stderr: --json > file is valid JSON, and the terminal shows it', () => {
  const line =
    // Without CI, which would ask for the plain lines (the suite itself may run in CI).
    `env -u CI MOD_MODEL_DIR=${shellWord(TOY_MODEL)} MOD_CACHE_DIR=${shellWord(warmCacheDir(join(dir.path, 'tty-cache')))} ${shellWord(process.execPath)} ${shellWord(BIN)} eval ${shellWord(clean)} ` +
    `--config ${shellWord(policy)} --json > ${shellWord(join(dir.path, 'tty.json'))}; echo mod-exit=$?`
  const shown = execFileSync('script', ['-qfec', `sh -c ${shellWord(line)}`, '/dev/null'], {encoding: 'utf8', timeout: 60_000})
  assert.match(shown, 'mod-exit=0')
  assert.match(shown, 'Scoring')
  // On a terminal, listr2's task list: each finished step ticked, no plain [STARTED] lines.
  assert.match(shown, '✔ Scoring: 9/9 images')
  assert.not.match(shown, '[STARTED]')
  assert.is(JSON.parse(readFileSync(join(dir.path, 'tty.json'), 'utf8')).metrics.images, 9)
})

test('red vs blue: redness has recall 1 and flags no safe image', async () => {
  const r = await runInProcess(['eval', clean, '--config', policy, '--json'], {env})
  assert.is(r.code, 0, r.stderr)
  const json = JSON.parse(r.stdout)
  const redness = row(json, 'redness')
  assert.equal([redness.positives, redness.recall, redness.precision, redness.safe_fpr], [4, 1, 1, 0])
  assert.is(json.metrics.average_recall, 1)
  assert.is(json.metrics.safe_flagged, 0)
  assert.is(json.metrics.images, 9)
  assert.equal(json.errors, [])
  assert.equal(json.animations_truncated, [])
})

test('an image whose name is not UTF-8 is scored, in a folder and in a labels file that names it as scan shows it', async () => {
  const latin1 = join(dir.path, 'latin1')
  cpSync(clean, latin1, {recursive: true})
  // caf\xe9.png: a Latin-1 name, as archives made on older systems hold.
  const name = Buffer.concat([Buffer.from(join(latin1, 'redness', 'caf')), Buffer.from([0xe9]), Buffer.from('.png')])
  renameSync(join(latin1, 'redness', 'red0.png'), name)
  const r = await runInProcess(['eval', latin1, '--config', policy, '--json'], {env})
  assert.is(r.code, 0, r.stderr)
  const json = JSON.parse(r.stdout)
  assert.equal(json.errors, [])
  assert.equal([row(json, 'redness').positives, row(json, 'redness').recall], [4, 1])
  const labels = join(dir.path, 'latin1.csv')
  writeFileSync(labels, `file,labels\nlatin1/redness/caf\\xe9.png,redness\nlatin1/safe/blue0.png,safe\n`)
  const listed = await runInProcess(['eval', labels, '--config', policy, '--json'], {env})
  assert.is(listed.code, 0, listed.stderr)
  assert.equal(JSON.parse(listed.stdout).errors, [])
  assert.is(JSON.parse(listed.stdout).metrics.images, 2)
})

test('--model-dir and --cache-dir name the model and the cache, as MOD_MODEL_DIR and MOD_CACHE_DIR do', async () => {
  const cacheDir = warmCacheDir(join(dir.path, 'flag-cache'))
  const byFlags = await runInProcess(['eval', clean, '--config', policy, '--json', '--model-dir', TOY_MODEL, '--cache-dir', cacheDir])
  assert.is(byFlags.code, 0, byFlags.stderr)
  const byEnv = await runInProcess(['eval', clean, '--config', policy, '--json'], {env})
  assert.equal(JSON.parse(byFlags.stdout).metrics, JSON.parse(byEnv.stdout).metrics)
  assert.ok(readdirSync(cacheDir).includes('features'), readdirSync(cacheDir).join(' '))
})

test('a mixed set: the figures match a hand count, and an unreadable file, a broken link or a FIFO is reported, not fatal', async () => {
  const r = await runInProcess(['eval', mixed, '--config', policy, '--json'], {env})
  assert.is(r.code, 0, r.stderr)
  const json = JSON.parse(r.stdout)
  // redness images: 3 red + 1 blue + multi (red) = 5, flagged 4. Flagged without redness: the 2 red safe images.
  const redness = row(json, 'redness')
  assert.equal(
    [redness.positives, redness.true_positives, redness.false_positives, redness.recall, redness.precision, redness.safe_fpr],
    [5, 4, 2, 4 / 5, 4 / 6, 2 / 6],
  )
  // weapons: one image (multi), never flagged on the toy model.
  const weapons = row(json, 'weapons')
  assert.equal([weapons.positives, weapons.recall, weapons.safe_fpr], [1, 0, 0])
  assert.is(json.metrics.average_recall, (4 / 5 + 0) / 2)
  assert.is(json.metrics.safe_flagged, 2 / 6)
  const {rows, columns, counts} = json.metrics.confusion
  assert.equal(rows, ['weapons', 'redness', 'safe'])
  const at = (r: string, c: string) => counts[rows.indexOf(r)][columns.indexOf(c)]
  assert.equal([at('redness', 'redness'), at('redness', '(none)'), at('safe', 'redness'), at('safe', '(none)'), at('weapons', 'redness')], [4, 1, 2, 4, 1])
  assert.equal(json.errors.map((e: {source: string}) => e.source), ['redness/gone.png', 'safe/broken.png', 'safe/pipe.png'])
  assert.match(r.stderr, 'skipped safe/broken.png: unsupported_media')
  // Not opened (its reading would wait for a writer): said to be what it is.
  assert.match(r.stderr, /skipped safe\/pipe\.png: unsupported_media: \S*safe\/pipe\.png is a FIFO, not a regular file/)
  assert.match(r.stderr, /skipped redness\/gone\.png: unreadable_image: cannot read \S*redness\/gone\.png: a broken symbolic link \(its target does not exist\)/)
  assert.equal(json.unlisted, ['stray0.png'])
  assert.match(r.stderr, 'not used: stray0.png is in the dataset folder itself but not listed in labels.csv')
})

test('the table output names the headline figures; progress goes to stderr only', async () => {
  const r = await runInProcess(['eval', mixed, '--config', policy], {env})
  assert.is(r.code, 0, r.stderr)
  assert.match(r.stdout, 'average recall:       40.0%')
  assert.match(r.stdout, 'safe images flagged:  33.3%')
  assert.match(r.stdout, /redness\s+0\.5\s+5\s+80\.0%\s+66\.7%\s+33\.3%/)
  assert.not.match(r.stdout, 'Scoring')
  // Without a terminal, listr2's plain renderer: a line as each step starts and ends.
  assert.match(r.stderr, '[STARTED] Reading the settings and the policy\n[COMPLETED] Reading the settings and the policy\n')
  assert.match(r.stderr, '[COMPLETED] Scoring: 14/14 images\n')
})

test('a labels file of safe images alone: the table says there is no recall to sweep, not an empty sweep', async () => {
  writeFileSync(join(clean, 'safe-only.csv'), 'file,labels\nsafe/blue0.png,safe\nsafe/blue1.png,\n')
  const r = await runInProcess(['eval', join(clean, 'safe-only.csv'), '--config', policy], {env})
  assert.is(r.code, 0, r.stderr)
  assert.match(r.stdout, 'average recall:       n/a')
  assert.ok(r.stdout.trimEnd().endsWith('\nthreshold sweep: no label has images (only safe images), so there is no recall to sweep'), r.stdout)
})

test('an unknown label folder is a dataset error: exit 2', async () => {
  const bad = join(dir.path, 'bad')
  await writeImages(bad, 'safe', BLUE, 1)
  await writeImages(bad, 'rednes', RED, 1)
  const r = await runInProcess(['eval', bad, '--config', policy], {env})
  assert.is(r.code, 2)
  assert.match(r.stderr, 'unknown label rednes: not a category of the active policy (known: ')
  assert.is(r.stdout, '')
  // Without a head the problem names no head: mod calibrate, which takes none, says the same.
  const calibrated = await runInProcess(['calibrate', bad, '--config', policy], {env})
  assert.match(calibrated.stderr, 'unknown label rednes: not a category of the active policy (known: ')
})

test('a second eval on the same images runs no image encoder (features and prompts come from the cache)', async () => {
  const model = join(dir.path, 'model-copy')
  cpSync(TOY_MODEL, model, {recursive: true})
  const cacheEnv = {MOD_MODEL_DIR: model, MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache-2'))}
  const first = await runInProcess(['eval', clean, '--config', policy, '--json'], {env: cacheEnv})
  assert.is(first.code, 0, first.stderr)
  assert.is(JSON.parse(first.stdout).images_embedded, 9)
  // A broken image encoder of the size the manifest records (a shorter one is refused at load): any attempt to
  // load it would fail the run.
  const vision = join(model, 'onnx', 'vision_model.onnx')
  writeFileSync(vision, Buffer.alloc(statSync(vision).size, 'not an onnx file'))
  const second = await runInProcess(['eval', clean, '--config', policy, '--json'], {env: cacheEnv})
  assert.is(second.code, 0, second.stderr)
  const json = JSON.parse(second.stdout)
  assert.is(json.images_embedded, 0)
  assert.equal(json.metrics, JSON.parse(first.stdout).metrics)
  // New content does need the encoder, and here it is broken.
  await writeImages(clean, 'safe', BLUE, 1, 'new', 9)
  const third = await runInProcess(['eval', clean, '--config', policy, '--json'], {env: cacheEnv})
  assert.is(third.code, 2)
  assert.match(third.stderr, 'vision_model.onnx')
})

test('an animation showing more pictures than are scored is named (stderr, the table, the JSON, the page), from the feature cache too', async () => {
  const set = join(dir.path, 'animations')
  await writeImages(set, 'redness', RED, 2, 'red', 10)
  await writeImages(set, 'safe', BLUE, 1, 'blue', 11)
  // 70 other pictures: past the 64 frames scored. 64: every one scored.
  writeFileSync(join(set, 'safe', 'seventy.webp'), await slideshowWebp(70))
  writeFileSync(join(set, 'safe', 'sixty-four.webp'), await slideshowWebp(64))
  const cacheEnv = {...env, MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache-animations'))}
  const page = join(dir.path, 'animations.html')
  const first = await runInProcess(['eval', set, '--config', policy, '--json', '--report', page], {env: cacheEnv})
  assert.is(first.code, 0, first.stderr)
  const json = JSON.parse(first.stdout)
  assert.is(json.metrics.images, 5)
  assert.is(json.images_embedded, 5)
  assert.equal(json.animations_truncated, ['safe/seventy.webp'])
  assert.match(first.stderr, /^partly scored: safe\/seventy\.webp: some pictures of the animation not scored$/m)
  assert.not.match(first.stderr, 'sixty-four')
  const html = readFileSync(page, 'utf8')
  assert.match(html, '<h2>Animations scored in part (1)</h2>')
  assert.match(html, '<li>safe/seventy.webp</li>')
  // Again, every image's features from the cache: it keeps whether an animation's pictures were left out.
  const again = await runInProcess(['eval', set, '--config', policy, '--json'], {env: cacheEnv})
  assert.is(JSON.parse(again.stdout).images_embedded, 0)
  assert.equal(JSON.parse(again.stdout).animations_truncated, ['safe/seventy.webp'])
  const table = await runInProcess(['eval', set, '--config', policy], {env: cacheEnv})
  assert.is(table.code, 0, table.stderr)
  assert.match(table.stdout, /^scored in part: 1 animation with pictures not scored \(past the 64 frames scored\)$/m)
  assert.match(table.stderr, 'partly scored: safe/seventy.webp')
})

test('--report writes one self-contained page whose charts render in headless chromium without console errors', async () => {
  const page = join(dir.path, 'report.html')
  const r = await runInProcess(['eval', mixed, '--config', policy, '--report', page, '--json'], {env})
  assert.is(r.code, 0, r.stderr)
  const browser = await launchChromium()
  try {
    const tab = await browser.newPage()
    const problems: string[] = []
    const requests: string[] = []
    tab.on('console', (m) => m.type() === 'error' && problems.push(m.text()))
    tab.on('pageerror', (e) => problems.push(e.message))
    tab.on('request', (req) => requests.push(req.url()))
    await tab.goto(pathToFileURL(page).href)
    const canvases = await tab.evaluate(() =>
      [...document.querySelectorAll('canvas')].map((c) => {
        const {data} = (c.getContext('2d') as CanvasRenderingContext2D).getImageData(0, 0, c.width, c.height)
        let painted = 0
        for (let i = 3; i < data.length; i += 4) if (data[i] !== 0) painted++
        return {id: c.id, painted, width: c.width}
      }),
    )
    assert.equal(problems, [])
    assert.equal(requests, [pathToFileURL(page).href])
    // 12 policy labels with a histogram each, and a precision-recall curve for the two with images.
    assert.is(canvases.length, 14)
    assert.ok(canvases.some((c) => c.id === 'pr-redness'))
    for (const c of canvases) assert.ok(c.width > 0 && c.painted > 100, `${c.id} is empty`)
  } finally {
    await browser.close()
  }
})

test('--report naming a file that is not an HTML page (the labels file, say) is refused before scoring, the file kept', async () => {
  const labels = join(mixed, 'labels.csv')
  const before = readFileSync(labels, 'utf8')
  const r = await runInProcess(['eval', mixed, '--config', policy, '--report', labels], {env})
  assert.is(r.code, 2)
  assert.match(r.stderr, `mod: bad_request: --report ${labels}: the file there is not an HTML page`)
  assert.is(readFileSync(labels, 'utf8'), before)
})

test('SIGTERM while eval, calibrate or head train scores stops the work at once: exit 143, no report', async () => {
  const big = join(dir.path, 'big')
  await writeImages(big, 'redness', RED, 100, 'red')
  await writeImages(big, 'safe', BLUE, 100, 'blue', 1)
  const runs = {eval: ['eval', big], calibrate: ['calibrate', big], 'head train': ['head', 'train', big, '--out', join(dir.path, 'head.json')]}
  for (const [name, args] of Object.entries(runs)) {
    // A cache of its own: features cached by an earlier run would make the scoring too quick to stop.
    const cache = warmCacheDir(join(dir.path, `stop-${name.replace(' ', '-')}`))
    const child = spawn(process.execPath, [BIN, ...args, '--config', policy], {env: {...process.env, ...env, MOD_CACHE_DIR: cache}})
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
    const code = await new Promise<number | null>((done) => {
      child.stderr.setEncoding('utf8').on('data', (d: string) => {
        stderr += d
        // The step that scores the images has begun (listr2's plain lines without a terminal). One signal only: a
        // second one ends the process at once, as it does for a user pressing Ctrl-C twice.
        if (/\[STARTED\] (Scoring|Embedding)/.test(stderr) && !child.killed) child.kill('SIGTERM')
      })
      child.on('close', done)
    })
    assert.is(code, 143, `${name}: ${stderr}`)
    // Without the stop, the command scored all 200 images and printed its report before exiting 143.
    assert.is(stdout, '', name)
    assert.not.match(stderr, /200\/200/, name)
  }
})

test('a second signal while the models are still being opened ends the process of that signal at once, not of an abort in onnxruntime', async () => {
  const big = join(dir.path, 'big-twice')
  await writeImages(big, 'redness', RED, 20, 'red')
  await writeImages(big, 'safe', BLUE, 20, 'blue', 1)
  // A cache of its own, empty: the models' graphs are being optimised when the signals come.
  const child = spawn(process.execPath, [BIN, 'eval', big, '--config', policy], {env: {...process.env, ...env, MOD_CACHE_DIR: join(dir.path, 'twice-cache')}})
  let stderr = ''
  const ended = new Promise<[number | null, NodeJS.Signals | null]>((done) => {
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d
      if (!/\[STARTED\] Scoring/.test(stderr) || child.killed) return
      child.kill('SIGINT')
      setTimeout(() => child.kill('SIGINT'), 100)
    })
    child.on('close', (code, signal) => done([code, signal]))
  })
  // Ended by SIGINT itself (a shell reports 130), without the exit that aborted with a C++ exception (134).
  assert.equal(await ended, [null, 'SIGINT'], stderr)
  assert.not.match(stderr, /terminate called/)
})

test.run()

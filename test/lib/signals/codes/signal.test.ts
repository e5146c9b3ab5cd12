// The codes signal in the engine and the CLI: a policy's codes rules flag an uploaded photo with a QR code that
// points to a denied domain (its box in the uploaded image's pixels, border trim undone), and a video whose frames
// show it; without codes rules the signal does not run and results carry nothing of it; the policy's problems
// come with their lines; mod scan's table names the rule.
import {readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {buildPolicy, loadPolicyFile, validatePolicyText} from '../../../../src/lib/config/policy.js'
import {DEFAULT_LIMITS} from '../../../../src/lib/config/settings.js'
import {createEngine, type EngineOptions} from '../../../../src/lib/engine.js'
import type {Policy} from '../../../../src/lib/policy/types.js'
import {runInProcess, tempDir, TOY_MODEL} from '../../../helpers/cli.js'
import {signalStates, withoutSpecialist} from '../../../helpers/signals.js'
import {ffmpeg} from '../../video/helpers.js'
import {drawCode, printOnPhoto} from './draw.js'
import {warmCacheDir} from '../../../helpers/warm-cache.js'

const dir = tempDir()
test.after(() => dir.remove())

const POLICY = [
  'codes:',
  '  rules:',
  '    scam_links:',
  '      category: contact_info',
  '      domains:',
  '        deny: [evil.com]',
  '    products:',
  '      category: drugs',
  '      any: true',
  '      formats: [ean_13]',
  '',
].join('\n')
const policyFile = join(dir.path, 'codes.yaml')
const photoFile = join(dir.path, 'flyer.png')
const clipFile = join(dir.path, 'flyer.mp4')
/** Where the QR code's symbol is in the uploaded photo: [x0, y0, x1, y1]. */
let qrExtent: number[] = []

test.before(async () => {
  writeFileSync(policyFile, POLICY)
  const {image, extents} = await printOnPhoto('coffee.jpg', 800, 500, [
    {code: await drawCode('QRCode', 'https://shop.example@pay.evil.com/login', 4), left: 60, top: 80},
    {code: await drawCode('QRCode', 'https://shop.example/menu', 4), left: 460, top: 80},
  ])
  // A 30-pixel black border on the left and top: trimmed before the signals look, undone in the boxes.
  const png = await sharp(image.data, {raw: {width: image.width, height: image.height, channels: 3}})
    .extend({left: 30, top: 30, background: '#000000'})
    .png()
    .toBuffer()
  writeFileSync(photoFile, png)
  qrExtent = [extents[0][0] + 30, extents[0][1] + 30, extents[0][2] + 30, extents[0][3] + 30]
  await ffmpeg('-loop', '1', '-i', photoFile, '-t', '2', '-r', '5', '-vf', 'scale=830:530', '-c:v', 'libx264', '-pix_fmt', 'yuv420p', clipFile)
})

function options(policy: Policy): EngineOptions {
  return {preset: 'fast', modelDir: TOY_MODEL, cacheDir: warmCacheDir(join(dir.path, 'cache')), policy, limits: DEFAULT_LIMITS, threads: 1, signals: withoutSpecialist()}
}

test('a QR code pointing to a denied domain is a contact_info violation, with the code, the hit and its box in the uploaded pixels', async () => {
  const {policy} = await loadPolicyFile(policyFile)
  await using engine = createEngine(options(policy))
  const r = await engine.moderateImage(await sharp(photoFile).toBuffer(), 'flyer.png')
  assert.equal(engine.signals(), signalStates({clip: 'loaded', codes: 'loaded'}))
  assert.ok(r.violations.some((v) => v.name === 'contact_info' && v.confidence === 1))
  assert.equal(
    r.codes?.map((c) => [c.format, c.payload]),
    [
      ['qr_code', 'https://shop.example@pay.evil.com/login'],
      ['qr_code', 'https://shop.example/menu'],
    ],
  )
  assert.equal(
    r.code_hits?.map((h) => [h.rule, h.category, h.matched]),
    [['scam_links', 'contact_info', 'pay.evil.com']],
  )
  // The box of the hit's code, where it was printed in the uploaded image (within 2 pixels).
  const [x, y, w, h] = r.code_hits?.[0].box ?? []
  const [x0, y0, x1, y1] = qrExtent
  for (const [got, want] of [[x, x0], [y, y0], [x + w, x1], [y + h, y1]]) assert.ok(Math.abs(got - want) <= 2, `${got} vs ${want}`)
})

test('a code at the edge of a page is read whole although border trimming cuts its quiet zone from the scored frame', async () => {
  const {policy} = await loadPolicyFile(policyFile)
  assert.is(policy.trim_borders, true)
  await using engine = createEngine(options(policy))
  // A white page: the trim takes the white up to the code's first dark module (and the blue block's), which
  // leaves a Data Matrix without the quiet zone a reader needs.
  const code = await drawCode('DataMatrix', 'https://evil.com/x', 4)
  const block = await sharp({create: {width: 120, height: 200, channels: 3, background: '#2050a0'}}).png().toBuffer()
  const page = await sharp({create: {width: 640, height: 400, channels: 3, background: '#ffffff'}})
    .composite([
      {input: code.png, left: 0, top: 40},
      {input: block, left: 500, top: 100},
    ])
    .png()
    .toBuffer()
  const r = await engine.moderateImage(page, 'page.png')
  assert.equal(r.code_hits?.map((h) => [h.rule, h.format, h.payload]), [['scam_links', 'data_matrix', 'https://evil.com/x']])
  // Its box where the symbol was drawn, in the page's pixels (within 2).
  const [x, y, w, h] = r.code_hits?.[0].box ?? []
  const symbol = [code.margin, 40 + code.margin, code.width - code.margin, 40 + code.height - code.margin]
  for (const [got, want] of [[x, symbol[0]], [y, symbol[1]], [x + w, symbol[2]], [y + h, symbol[3]]]) assert.ok(Math.abs(got - want) <= 2, `${got} vs ${want}`)
})

test('a light-on-dark QR code pointing to a denied domain is read and caught, as phones open it', async () => {
  const {policy} = await loadPolicyFile(policyFile)
  await using engine = createEngine(options(policy))
  const code = await drawCode('QRCode', 'https://evil.com/win', 4)
  const inverted = await sharp(code.png).negate().png().toBuffer()
  const r = await engine.moderateImage(inverted, 'inverted.png')
  assert.equal(r.code_hits?.map((h) => [h.rule, h.payload]), [['scam_links', 'https://evil.com/win']])
})

test('a sheet of 40 codes: every code read is checked, the denied one last among them caught; the result lists 32', async () => {
  const {policy} = await loadPolicyFile(policyFile)
  await using engine = createEngine(options(policy))
  const payloads = Array.from({length: 40}, (_, i) => (i === 39 ? 'https://evil.com/win' : `https://ok${i}.example/`))
  const codes = await Promise.all(payloads.map((p) => drawCode('QRCode', p, 3)))
  const cell = Math.max(...codes.map((c) => Math.max(c.width, c.height))) + 10
  const page = await sharp({create: {width: 8 * cell, height: 5 * cell, channels: 3, background: '#ffffff'}})
    .composite(codes.map((c, i) => ({input: c.png, left: (i % 8) * cell, top: Math.floor(i / 8) * cell})))
    .png()
    .toBuffer()
  const r = await engine.moderateImage(page, 'sheet.png')
  assert.equal(r.code_hits?.map((h) => [h.rule, h.payload]), [['scam_links', 'https://evil.com/win']])
  assert.is(r.codes?.length, 32)
  assert.is(r.codes_truncated, undefined)
})

test('without codes rules the signal does not run and results carry no codes', async () => {
  await using engine = createEngine(options(buildPolicy({categories: [{name: 'redness', prompts: ['red']}]})))
  const r = await engine.moderateImage(await sharp(photoFile).toBuffer(), 'flyer.png')
  assert.equal(engine.signals(), signalStates({clip: 'loaded'}))
  assert.is('codes' in r, false)
  assert.is('code_hits' in r, false)
  assert.ok(!r.violations.some((v) => v.name === 'contact_info'))
})

test('a video whose frames show the code: its contact_info segment lists the code and the hit', async () => {
  const {policy} = await loadPolicyFile(policyFile)
  await using engine = createEngine(options(policy))
  const r = await engine.moderateVideo(clipFile, {source: 'flyer.mp4', fps: 2, minFrames: 1, stopOnViolation: false})
  const contact = r.violations.find((v) => v.name === 'contact_info')
  assert.ok(contact, JSON.stringify(r.violations.map((v) => v.name)))
  const [segment] = contact.segments
  assert.ok(segment.frames >= 3)
  assert.equal(segment.code_hits?.map((h) => [h.rule, h.payload]), [['scam_links', 'https://shop.example@pay.evil.com/login']])
  assert.ok(segment.codes?.some((c) => c.payload === 'https://shop.example/menu'))
})

test('the codes section is checked with lines and columns: unknown formats, bad domains, a rule without a check, a disabled category', () => {
  const text = [
    'categories:',
    '  drugs:',
    '    enabled: false',
    'codes:',
    '  rules:',
    '    a:',
    '      category: contact_info',
    '      formats: [qr, ean_13]',
    '      domains:',
    '        deny: ["", evil.com]',
    '    b:',
    '      category: contact_info',
    '    c:',
    '      category: drugs',
    '      any: true',
    '    d:',
    '      category: contact_info',
    '      colour: red',
    '',
  ].join('\n')
  const {problems} = validatePolicyText(text)
  // Each problem on the line and column of what it is about (the messages go on with what is allowed).
  assert.equal(
    problems.map((p) => `${p.line}:${p.column} ${p.message.split(' (')[0].split(';')[0]}`),
    [
      '8:17 codes.rules.a.formats[0] "qr" is not a format',
      '10:16 codes.rules.a.domains.deny[0] "" is not a domain name',
      '11:5 codes.rules.b needs one of any, domains, words, regex, detect',
      '14:17 codes.rules.c.category: no enabled category is named "drugs"',
      '18:7 unknown key "colour" in codes.rules.d',
    ],
  )
})

test('mod scan names the codes rule in the table row, prints the codes in --json and marks them in --report; policy validate lists the rules', async () => {
  const env = {MOD_MODEL_DIR: TOY_MODEL, MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache')), MOD_THREADS: '1'}
  const table = await runInProcess(['scan', photoFile, '--config', policyFile], {env})
  assert.match(table.stdout, 'contact_info 1.00>=0.5 (code rule scam_links: "https://shop.example@pay.evil.com/login")')
  assert.is(table.code, 1)
  const json = await runInProcess(['scan', photoFile, '--config', policyFile, '--json'], {env})
  const [result] = JSON.parse(json.stdout) as {codes: {format: string}[]; code_hits: {rule: string}[]}[]
  assert.equal([result.codes.length, result.code_hits.map((h) => h.rule)], [2, ['scam_links']])
  // The HTML report draws each code's box (a purple mark) and lists the hit under the item.
  const report = join(dir.path, 'report.html')
  await runInProcess(['scan', photoFile, '--config', policyFile, '--report', report], {env})
  const page = readFileSync(report, 'utf8')
  const tag = '<script id="report-items" type="application/json">'
  const items = JSON.parse(page.slice(page.indexOf(tag) + tag.length, page.indexOf('</script>'))) as {
    marks: {kind: string; caption: string}[]
    notes: string[]
  }[]
  assert.equal(items[0].marks.map((m) => [m.kind, m.caption]), [
    ['mark', 'qr_code: https://shop.example@pay.evil.com/login'],
    ['mark', 'qr_code: https://shop.example/menu'],
  ])
  assert.equal(items[0].notes, ['code rule scam_links (contact_info): qr_code "https://shop.example@pay.evil.com/login"'])
  const validate = await runInProcess(['policy', 'validate', policyFile], {env})
  assert.match(validate.stdout, /codes rules: +scam_links, products/)
  assert.is(validate.code, 0)
})

test.run()

/**
 * `tsx bench/nsfw-false-alarms.ts [FILE|DIR …]` (default: test/fixtures/photos): the embedded NSFW specialist on
 * ordinary images, printed as the markdown table of bench/nsfw-false-alarms.md. For each image: nsfwjs's argmax
 * class, the five probabilities of the image as it is, averaged with its mirror, and of the border-trimmed image
 * (src/lib/image/trim.ts) averaged with its mirror; then what nsfwjs's rule (argmax is Porn, Hentai or Sexy)
 * and src/lib/scoring/nsfw-rule.ts at 0.5 flag. mod's runner gives nsfwjs's probabilities within 1e-4
 * (test/lib/model/nsfw-parity.test.ts), so the argmax is nsfwjs's.
 */

import './no-telemetry.js'
import {readdir, readFile, stat} from 'node:fs/promises'
import {basename, join} from 'node:path'

import {DEFAULT_LIMITS} from '../src/lib/config/settings.js'
import {decodeImage} from '../src/lib/image/decode.js'
import {nsfwPreprocess} from '../src/lib/image/nsfw-preprocess.js'
import {trimBorders} from '../src/lib/image/trim.js'
import {openNsfw} from '../src/lib/model/nsfw.js'
import {NSFW_CLASSES} from '../src/lib/model/nsfw-manifest.js'
import {averageViews, nsfwCategoryScores} from '../src/lib/signals/nsfw/rule.js'
import type {RgbImage} from '../src/lib/types.js'
import {ROOT} from './lib.js'

const IMAGE = /\.(jpe?g|png|webp|gif|tiff?|avif)$/i
const FLAGGED = new Set(['Porn', 'Hentai', 'Sexy'])

async function files(args: string[]): Promise<string[]> {
  const out: string[] = []
  for (const a of args.length > 0 ? args : [join(ROOT, 'test', 'fixtures', 'photos')]) {
    if ((await stat(a)).isDirectory()) out.push(...(await readdir(a)).filter((f) => IMAGE.test(f)).sort().map((f) => join(a, f)))
    else out.push(a)
  }
  return out
}

const pct = (p: ArrayLike<number>): string => Array.from(p, (x) => Math.round(100 * x)).join(' / ')
const argmax = (p: ArrayLike<number>): string => {
  const a = Array.from(p)
  return NSFW_CLASSES[a.indexOf(Math.max(...a))]
}

function flags(p: ArrayLike<number>): string {
  const s = nsfwCategoryScores(p)
  const on = (Object.entries(s) as [string, number][]).filter(([, v]) => v >= 0.5).map(([k]) => k)
  return on.length > 0 ? on.join(', ') : '-'
}

/** nudity / sexual_activity / suggestive in %, and the categories at or over 0.5. */
function rule(p: ArrayLike<number>): string {
  const s = nsfwCategoryScores(p)
  return `${pct([s.nudity, s.sexual_activity, s.suggestive])}: ${flags(p)}`
}

const clearFlag = (p: ArrayLike<number>): boolean => FLAGGED.has(argmax(p)) && Math.max(...Array.from(p)) > 0.5

const model = await openNsfw()
const rows: string[] = []
const counts = {images: 0, argmaxPlain: 0, argmaxClear: 0, argmaxFlip: 0, clearFlip: 0, rulePlain: 0, ruleFlip: 0, ruleTrim: 0, clearKept: 0}
async function views(img: RgbImage): Promise<[Float32Array, Float32Array]> {
  const [a, b] = await model.classify(nsfwPreprocess(img, {flip: true}), 2)
  return [a, averageViews([a, b])]
}
for (const path of await files(process.argv.slice(2))) {
  const [img] = await decodeImage(await readFile(path), DEFAULT_LIMITS)
  const [plain, flip] = await views(img)
  const trimmed = trimBorders(img)
  const [, trim] = await views(trimmed)
  const top = argmax(plain)
  counts.images++
  if (FLAGGED.has(top)) counts.argmaxPlain++
  if (clearFlag(plain)) counts.argmaxClear++
  if (FLAGGED.has(argmax(flip))) counts.argmaxFlip++
  if (clearFlag(flip)) counts.clearFlip++
  if (flags(plain) !== '-') counts.rulePlain++
  if (flags(flip) !== '-') counts.ruleFlip++
  if (flags(trim) !== '-') counts.ruleTrim++
  if (clearFlag(flip) && flags(flip) !== '-') counts.clearKept++
  const trimNote = trimmed === img ? '' : ` (trim ${trimmed.width}x${trimmed.height})`
  rows.push(
    `| ${basename(path)} | ${img.width}x${img.height}${trimNote} | ${top} ${Math.round(100 * Math.max(...plain))}% | ${pct(plain)} | ${pct(flip)} | ${pct(trim)} | ${rule(flip)} |`,
  )
}
await model.close()

process.stdout.write(
  `| image | size | nsfwjs argmax | plain D / H / N / P / S % | flip-averaged | trimmed + flip-averaged | nsfw-rule on flip-averaged: nudity / sexual / suggestive %: flags at 0.5 |\n|---|---|---|---|---|---|---|\n${rows.join('\n')}\n\n`,
)
process.stdout.write(
  `${counts.images} images. nsfwjs rule (argmax Porn/Hentai/Sexy) on the image as it is: ${counts.argmaxPlain} flagged, ` +
    `${counts.argmaxClear} with p > 0.5; on flip-averaged probabilities: ${counts.argmaxFlip}, ${counts.clearFlip} with p > 0.5. ` +
    `nsfw-rule at 0.5: plain ${counts.rulePlain}, flip-averaged ${counts.ruleFlip}, trimmed + flip-averaged ${counts.ruleTrim}; ` +
    `of the flip-averaged images nsfwjs flags with p > 0.5, nsfw-rule flags ${counts.clearKept} of ${counts.clearFlip}.\n`,
)

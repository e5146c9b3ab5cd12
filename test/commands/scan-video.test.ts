import {readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {runInProcess, tempDir, TOY_MODEL, writeRednessPolicy} from '../helpers/cli.js'
import {colourClip, ffmpeg} from '../lib/video/helpers.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const dir = tempDir()
const env = {MOD_MODEL_DIR: TOY_MODEL, MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache'))}
let policy = ''
let redBlueRed = ''

test.before(async () => {
  policy = writeRednessPolicy(dir.path)
  redBlueRed = await colourClip(join(dir.path, 'rbr.mp4'), ['red', 'blue', 'red'], 2)
})

test.after(() => dir.remove())

test('red 0-2 s, blue 2-4 s, red 4-6 s at 1 fps gives redness segments [0,2] and [4,6]', async () => {
  const r = await runInProcess(['scan-video', redBlueRed, '--config', policy, '--json'], {env})
  assert.is(r.code, 1, r.stderr)
  const result = JSON.parse(r.stdout)
  assert.is(result.source, redBlueRed)
  assert.is(result.is_safe, false)
  assert.is(result.fps, 1)
  assert.is(result.frames_analyzed, 6)
  assert.is(result.duration, 6)
  assert.is(result.stopped_early, false)
  assert.equal(result.violations.map((v: {name: string}) => v.name), ['redness'])
  const segments = result.violations[0].segments.map((s: {start: number; end: number; frames: number}) => [s.start, s.end, s.frames])
  assert.equal(segments, [[0, 2, 2], [4, 6, 2]])
  assert.ok(result.violations[0].max_confidence > 0.99)
})

test('--min-frames 3 drops both two-frame segments: safe, exit 0', async () => {
  const r = await runInProcess(['scan-video', redBlueRed, '--config', policy, '--min-frames', '3', '--json'], {env})
  assert.is(r.code, 0, r.stderr)
  const result = JSON.parse(r.stdout)
  assert.is(result.is_safe, true)
  assert.equal(result.violations, [])
})

test('--stop-on-violation returns one segment, stopped_early, after fewer frames', async () => {
  const r = await runInProcess(['scan-video', redBlueRed, '--config', policy, '--stop-on-violation', '--json'], {env})
  assert.is(r.code, 1, r.stderr)
  const result = JSON.parse(r.stdout)
  assert.is(result.stopped_early, true)
  assert.ok(result.frames_analyzed < 6, String(result.frames_analyzed))
  assert.is(result.violations.length, 1)
  assert.is(result.violations[0].segments.length, 1)
})

test('--ndjson prints each segment as found, then the result', async () => {
  const r = await runInProcess(['scan-video', redBlueRed, '--config', policy, '--ndjson'], {env})
  assert.is(r.code, 1, r.stderr)
  const lines = r.stdout.trim().split('\n').map((l) => JSON.parse(l))
  assert.is(lines.length, 3)
  assert.equal(lines.slice(0, 2).map((l) => [l.type, l.name, l.start, l.end]), [['segment', 'redness', 0, 2], ['segment', 'redness', 4, 6]])
  assert.is(lines[2].is_safe, false)
})

test('the table output gives the verdict and one line per segment', async () => {
  const r = await runInProcess(['scan-video', redBlueRed, '--config', policy], {env})
  assert.is(r.code, 1)
  const lines = r.stdout.trim().split('\n')
  assert.match(lines[0], /^UNSAFE\s+.*rbr\.mp4\s+\(6\.0 s, 6 frames at 1 fps\)/)
  assert.match(lines[1], /redness\s+0:00\.0-0:02\.0\s+2 frames/)
  assert.match(lines[2], /redness\s+0:04\.0-0:06\.0\s+2 frames/)
})

test('with no CLIP model, the verdict counts the categories checked, stderr names the rest, and --strict exits 2 before decoding', async () => {
  const blue = await colourClip(join(dir.path, 'blue.mp4'), ['blue'], 2)
  const cache = {MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'empty-cache'))}
  const r = await runInProcess(['scan-video', blue], {env: cache})
  assert.is(r.code, 0, r.stderr)
  assert.match(r.stdout, /^SAFE\s+\S*blue\.mp4\s+\(2\.0 s, 2 frames at 1 fps; 3 of 11 categories checked\)\n$/)
  assert.match(r.stderr, /^mod: not evaluated: violence, gore, weapons, hate_symbols, drugs, self_harm, alcohol, tobacco \(no CLIP model installed; run `mod models pull fast` to score them; --strict makes this exit 2\)\n$/)
  const strict = await runInProcess(['scan-video', blue, '--strict', '--json'], {env: cache})
  assert.is(strict.code, 2, strict.stderr)
  assert.is(strict.stdout, '')
  assert.is(strict.stderr, r.stderr)
  const full = await runInProcess(['scan-video', blue, '--config', policy, '--strict'], {env})
  assert.is(full.code, 0, full.stderr)
  assert.not.match(full.stdout, /categories checked/)
  // --only nsfw: the specialist's categories alone, nothing left unchecked, as `mod scan --only` does.
  const only = await runInProcess(['scan-video', blue, '--only', 'nsfw', '--strict', '--json'], {env: cache})
  assert.is(only.code, 0, only.stderr)
  assert.is(only.stderr, '')
  assert.equal(JSON.parse(only.stdout).not_evaluated, [])
  const all = await runInProcess(['scan-video', blue, '--json'], {env: cache})
  assert.is(JSON.parse(all.stdout).not_evaluated.length, 8)
})

test('what a viewer sees is scored: a red first frame, a red second stream, red cover art, and a clear frame as the white it shows', async () => {
  const at = (name: string): string => join(dir.path, name)
  await colourClip(at('blue-red.mp4'), ['blue', 'red'], 1)
  await colourClip(at('blue.mp4'), ['blue'], 2)
  await colourClip(at('black.mp4'), ['black'], 2)
  await Promise.all([
    // Red for its first 0.04 s only.
    ffmpeg(...['-f', 'lavfi', '-i', 'color=c=blue:s=64x64:r=25:d=3', '-vf', "drawbox=c=red:t=fill:enable='eq(n,0)'", '-c:v', 'mpeg4', at('red-first.mp4')]),
    ffmpeg(...['-i', at('blue.mp4'), '-i', at('blue-red.mp4'), '-map', '0:v', '-map', '1:v', '-c', 'copy', at('second-stream.mkv')]),
    ffmpeg(...['-f', 'lavfi', '-i', 'color=c=red:s=32x32', '-frames:v', '1', at('red.png')]).then(() =>
      ffmpeg(...['-i', at('red.png'), '-i', at('blue.mp4'), '-map', '0', '-map', '1:v', '-c:v:0', 'png', '-c:v:1', 'copy', '-disposition:v:0', 'attached_pic', at('cover.mp4')]),
    ),
    ffmpeg(...['-f', 'lavfi', '-i', 'color=c=black@0:s=64x64:r=10:d=2,format=rgba', '-c:v', 'png', at('clear-black.mov')]),
  ])
  // A song's artwork, the picture a player shows of it.
  await ffmpeg(...['-f', 'lavfi', '-i', 'sine=d=2', '-i', at('red.png'), '-map', '0:a', '-map', '1', '-c:a', 'libmp3lame', '-c:v', 'mjpeg', '-disposition:v:0', 'attached_pic', at('song.mp3')])
  // The toy model's "red" takes white for red too, but not black: clear black, shown white, is flagged as black is not.
  const found: Record<string, unknown> = {}
  for (const name of ['red-first.mp4', 'second-stream.mkv', 'cover.mp4', 'song.mp3', 'clear-black.mov', 'black.mp4']) {
    const r = await runInProcess(['scan-video', at(name), '--config', policy, '--json'], {env})
    const result = JSON.parse(r.stdout)
    found[name] = [r.code, result.frames_analyzed, result.violations.flatMap((v: {segments: {start: number; end: number}[]}) => v.segments.map((g) => [g.start, g.end]))]
  }
  assert.equal(found, {
    'red-first.mp4': [1, 3, [[0, 1]]],
    'second-stream.mkv': [1, 2, [[1, 2]]],
    'cover.mp4': [1, 2, [[0, 1]]],
    'song.mp3': [1, 1, [[0, 1]]],
    'clear-black.mov': [1, 2, [[0, 2]]],
    'black.mp4': [0, 2, []],
  })
})

test('a clip longer than MOD_MAX_VIDEO_SECONDS is refused with video_too_long, exit 2', async () => {
  const long = await colourClip(join(dir.path, 'long.mp4'), ['blue'], 20)
  const r = await runInProcess(['scan-video', long, '--config', policy, '--json'], {env: {...env, MOD_MAX_VIDEO_SECONDS: '10'}})
  assert.is(r.code, 2)
  assert.match(r.stderr, /video_too_long/)
})

test('a truncated MP4 and a text file are unsupported_media, exit 2', async () => {
  const truncated = join(dir.path, 'truncated.mp4')
  const bytes = readFileSync(redBlueRed)
  writeFileSync(truncated, bytes.subarray(0, Math.floor(bytes.length / 2)))
  const text = join(dir.path, 'notes.mp4')
  writeFileSync(text, 'this is not a video\n'.repeat(50))
  for (const file of [truncated, text]) {
    const r = await runInProcess(['scan-video', file, '--config', policy], {env})
    assert.is(r.code, 2, file)
    assert.match(r.stderr, /unsupported_media/)
  }
})

test('an image of a format that is refused (SVG) says so, not that it is no video', async () => {
  const svg = join(dir.path, 'drawing.svg')
  writeFileSync(svg, '<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8" height="8"/></svg>')
  const r = await runInProcess(['scan-video', svg, '--config', policy], {env})
  assert.is(r.code, 2)
  assert.is(r.stderr, 'mod: unsupported_media: SVG images are not supported; send JPEG, PNG, WebP, GIF, AVIF or TIFF\n')
})

test('a text file named .txt is not rendered as video: unsupported_media', async () => {
  const text = join(dir.path, 'notes.txt')
  writeFileSync(text, 'plain words\n'.repeat(200))
  const r = await runInProcess(['scan-video', text, '--config', policy], {env})
  assert.is(r.code, 2)
  assert.match(r.stderr, /unsupported_media/)
})

test('a bad --fps or --min-frames is a one-line usage error naming the flag and its bounds', async () => {
  const r = await runInProcess(['scan-video', redBlueRed, '--fps', '11'], {env})
  assert.is(r.code, 2)
  assert.is(r.stderr, 'mod: usage: --fps="11" is not valid: expected a number from 0.01 to 10 in plain decimal (2, 0.5)\n')
  // Plain decimal, as the API takes it: an exponent is refused here too.
  for (const value of ['fast', '1e0']) {
    const notNumber = await runInProcess(['scan-video', redBlueRed, '--fps', value], {env})
    assert.is(notNumber.code, 2)
    assert.is(notNumber.stderr, `mod: usage: --fps=${JSON.stringify(value)} is not valid: expected a number from 0.01 to 10 in plain decimal (2, 0.5)\n`)
  }
  const fraction = await runInProcess(['scan-video', redBlueRed, '--min-frames', '1.5'], {env})
  assert.is(fraction.code, 2)
  assert.is(fraction.stderr, 'mod: usage: --min-frames="1.5" is not valid: expected a whole number from 1 to 1000\n')
  const tooMany = await runInProcess(['scan-video', redBlueRed, '--min-frames', '1001'], {env})
  assert.is(tooMany.code, 2)
  assert.is(tooMany.stderr, 'mod: usage: --min-frames="1001" is not valid: expected a whole number from 1 to 1000\n')
})

test('a missing ffmpeg is one clear error', async () => {
  const r = await runInProcess(['scan-video', redBlueRed, '--config', policy], {env: {...env, MOD_FFMPEG: join(dir.path, 'no-ffmpeg')}})
  assert.is(r.code, 2)
  assert.match(r.stderr, /ffmpeg_missing: .*MOD_FFMPEG/)
})

test.run()

import {readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {decodeFrames} from '../../../src/lib/video/frames.js'
import {createLeveledLog} from '../../../src/lib/video/ffmpeg-log.js'
import {surveyPackets} from '../../../src/lib/video/packets.js'
import {inputFormat} from '../../../src/lib/video/streams.js'
import {colourClip, decodeFailure, decodeOptions, ffmpeg, fakeFfmpeg, meanChannel, tempDir} from './helpers.js'

const tmp = tempDir()
test.after(() => tmp.remove())

/** A log as ffmpeg writes it at `level+info` while it describes a file and lists its packets. */
const LOG = `[info] Input #0, mov,mp4,m4a,3gp,3g2,mj2, from '/up/x.mp4':
[info]   Metadata:
[info]     title           : a
                    : [info]   Stream #0:9: Video: png, rgba, 64x64
[mov,mp4,m4a,3gp,3g2,mj2 @ 0x55d1e70911c0] [warning] stream 0, timescale not set
[info]   Duration: 00:00:02.00, start: 0.000000, bitrate: 88 kb/s
[info]   Stream #0:0[0x1](und): Video: h264 (High), yuv420p(progressive), 64x48, 5 fps, 5 tbr, 10240 tbn (default)
[h264 @ 0x55d1e7093000] [info] a component's own line
[info] Output #0, framecrc, to 'pipe:1':
[info]   Stream #0:0(und): Video: h264 (High), yuv420p(progressive), 64x48, q=2-31, 5 fps
[info] Stream mapping:
[info]   Stream #0:0 -> #0:0 (copy)
[h264 @ 0x55d1e7093000] [error] co located POCs unavailable
[fatal] Stream map '0:V' matches no streams.
To ignore this, add a trailing '?' to the map.
[info] video:1kB audio:0kB subtitle:0kB`

test("tells ffmpeg's description of the file from its errors, the level tags left out", () => {
  const log = createLeveledLog()
  log.push(LOG)
  log.end()
  // The description: the input's lines, a metadata value's second line (untagged) joined to its first, so that no
  // value passes for a line of its own, warnings and components' lines left out; it ends where the output's starts.
  assert.is(
    log.description(),
    `Input #0, mov,mp4,m4a,3gp,3g2,mj2, from '/up/x.mp4':
  Metadata:
    title           : a\\n                    : [info]   Stream #0:9: Video: png, rgba, 64x64
  Duration: 00:00:02.00, start: 0.000000, bitrate: 88 kb/s
  Stream #0:0[0x1](und): Video: h264 (High), yuv420p(progressive), 64x48, 5 fps, 5 tbr, 10240 tbn (default)
`,
  )
  // The streams the run reads, from its stream mapping (the output's stream line is not one).
  assert.equal(log.mapped(), [0])
  // The errors: error and fatal lines with their components' prefixes, and a message's second line.
  assert.is(
    log.errors(),
    `[h264 @ 0x55d1e7093000] co located POCs unavailable
Stream map '0:V' matches no streams.
To ignore this, add a trailing '?' to the map.
`,
  )
})

test("a metadata key with a line break neither ends the description nor passes for a line of ffmpeg's: every video stream is still decoded", async () => {
  // Two streams, red and blue, under a key whose second line starts at the margin, as ffmpeg's own lines do: the
  // description ended there, and the blue stream was never decoded.
  const red = await colourClip(join(tmp.dir, 'red-for-key.mp4'), ['red'], 1)
  const keyed = join(tmp.dir, 'keyed.mkv')
  await ffmpeg('-i', red, '-f', 'lavfi', '-i', 'color=c=blue:s=64x64:d=1:r=10', '-map', '0:v', '-map', '1:v', '-c:v', 'mpeg4', '-metadata', 'a\nStream #0:9: Video: png=b', keyed)
  const frames: [number, string][] = []
  for await (const f of decodeFrames(keyed, decodeOptions())) frames.push([f.stream, meanChannel(f.image, 0) > 200 ? 'red' : meanChannel(f.image, 2) > 200 ? 'blue' : 'other'])
  assert.equal(frames, [[0, 'red'], [1, 'blue']])
  // An MP4's own keys are written as given: one that goes on with lines tagged as ffmpeg's own still ends the
  // description, and may add stream lines to it (here the first stream twice, as many as the file has): the streams
  // the listing of the packets reads that the description does not name refuse the file. The second was left out.
  const forgeries = ['a\n[info] X=b', `a\n${'[info]   Stream #0:0: Video: mpeg4, yuv420p, 64x64, 10 fps\n'.repeat(2)}[info] X=b`]
  for (const [i, key] of forgeries.entries()) {
    const forged = join(tmp.dir, `forged-${i}.mp4`)
    await ffmpeg('-i', keyed, '-map', '0:v', '-c', 'copy', '-map_metadata', '-1', '-movflags', 'use_metadata_tags', '-metadata', key, forged)
    assert.equal(await decodeFailure(forged), {
      code: 'unsupported_media',
      message: "the file has video streams that ffmpeg's description of it does not name (its metadata reads as lines of ffmpeg's own): remove its metadata (ffmpeg -map_metadata -1) and try again",
      decoded: 0,
    }, key)
  }
})

test('reads lines split across chunks, and the last line without its newline', () => {
  const log = createLeveledLog()
  const text = `${LOG}\n[error] the last line`
  for (let i = 0; i < text.length; i += 7) log.push(text.slice(i, i + 7))
  log.end()
  assert.ok(log.description().startsWith('Input #0, mov'))
  assert.ok(log.description().endsWith('10240 tbn (default)\n'))
  assert.ok(log.errors().endsWith('the last line\n'), log.errors())
})

test('a file that ffmpeg cannot open has no description, only its error', () => {
  const log = createLeveledLog()
  log.push("[error] /up/x.mp4: Invalid data found when processing input\n")
  log.end()
  assert.equal([log.description(), log.errors()], ['', '/up/x.mp4: Invalid data found when processing input\n'])
})

test('ffmpeg describes a video in the run that lists its packets: an MP4 takes two runs, an MPEG-TS (listed again with its own options) three', async () => {
  const runs = join(tmp.dir, 'runs')
  const counting = fakeFfmpeg(join(tmp.dir, 'ffmpeg-counting'), `echo run >> '${runs}'\nexec ffmpeg "$@"`)
  const count = async (clip: string): Promise<number> => {
    const frames = []
    for await (const frame of decodeFrames(clip, decodeOptions({ffmpeg: counting, fps: 1}))) frames.push(frame.time)
    assert.equal(frames, [0, 1])
    const n = readFileSync(runs, 'utf8').split('\n').filter(Boolean).length
    writeFileSync(runs, '')
    return n
  }
  const mp4 = await colourClip(join(tmp.dir, 'blue.mp4'), ['blue'], 2)
  const ts = await colourClip(join(tmp.dir, 'blue.ts'), ['blue'], 2, {codec: ['-c:v', 'mpeg2video', '-f', 'mpegts']})
  writeFileSync(runs, '')
  assert.is(await count(mp4), 2)
  assert.is(await count(ts), 3)
  // The MPEG-TS's first run stops at its description, before its packets: they are listed with the demuxer's options.
  const listing = {ffmpeg: 'ffmpeg', maxSeconds: 60, maxPackets: 10_000, maxPixels: 1e8, stallTimeoutMs: 10_000, timeoutMs: 60_000}
  const tsSurvey = await surveyPackets(ts, listing)
  assert.equal([inputFormat(tsSurvey.description), tsSurvey.scan], ['mpegts', undefined])
  const mp4Survey = await surveyPackets(mp4, listing)
  assert.equal([inputFormat(mp4Survey.description), mp4Survey.scan], ['mov', {end: 2, packets: 20, streams: [20]}])
})

/** A description whose metadata (tags of `tags` lines) comes before its streams' lines, as a file's own tags do. */
function taggedDescription(tags: number, streams: string[]): string {
  const lines = ["[info] Input #0, matroska,webm, from 'x.mkv':", '[info]   Metadata:']
  for (let i = 0; i < tags; i++) lines.push(`[info]     k${String(i).padStart(5, '0')}          : ${'x'.repeat(40)}`)
  lines.push('[info]   Duration: 00:00:03.00, start: 0.000000, bitrate: 9 kb/s', ...streams.map((l) => `[info]   ${l}`), '[info]     Metadata:', '[info]       rotate          : 90')
  lines.push("[info] Output #0, framecrc, to 'pipe:1':")
  return `${lines.join('\n')}\n`
}

test("past its first 256 KiB (a file's own tags), the description keeps the lines that say what the streams are", () => {
  const streams = ['Stream #0:0: Video: mpeg4, yuv420p, 64x64, 10 fps', 'Stream #0:1: Video: mpeg4, yuv420p, 64x48, 10 fps']
  const log = createLeveledLog()
  log.push(taggedDescription(6000, streams))
  log.end()
  const text = log.description()
  assert.ok(text.length < 256 * 1024 + 1024, `${text.length} characters kept`)
  assert.ok(text.endsWith(`  Duration: 00:00:03.00, start: 0.000000, bitrate: 9 kb/s\n  ${streams[0]}\n  ${streams[1]}\n      rotate          : 90\n`), text.slice(-400))
  assert.not.match(text, 'k05999')
  assert.is(log.cut(), false)
})

test('stream lines past what is kept (1 MiB after the first 256 KiB) cut the description', () => {
  const long = Array.from({length: 4000}, (_, i) => `Stream #0:${i}(${'x'.repeat(300)}): Audio: aac, 48000 Hz, stereo`)
  const log = createLeveledLog()
  log.push(taggedDescription(6000, long))
  log.end()
  assert.is(log.cut(), true)
  assert.ok(log.description().length < 256 * 1024 + 1024 * 1024 + 1024)
  const whole = createLeveledLog()
  whole.push(taggedDescription(6000, long.slice(0, 2000)))
  whole.end()
  assert.is(whole.cut(), false)
})

test("a video stream described behind 290 KB of the file's tags is decoded like the others; a file whose stream lines are cut is refused", async () => {
  const clip = (name: string) => join(tmp.dir, name)
  // Blue for 3 s, and a second stream blue for 1 s then red: the red one must be decoded.
  await ffmpeg(
    ...['-f', 'lavfi', '-i', 'color=c=blue:s=64x64:d=3:r=10', '-f', 'lavfi', '-i', 'color=c=blue:s=64x64:d=1:r=10[a];color=c=red:s=64x64:d=1:r=10[b];[a][b]concat=n=2:v=1:a=0'],
    ...['-map', '0:v', '-map', '1:v', '-c:v', 'mpeg4', clip('two.mkv')],
  )
  const tags = Array.from({length: 6000}, (_, i) => `k${String(i).padStart(5, '0')}=${'x'.repeat(40)}`)
  writeFileSync(clip('tags.txt'), `;FFMETADATA1\n${tags.join('\n')}\n`)
  await ffmpeg('-i', clip('two.mkv'), '-i', clip('tags.txt'), '-map', '0', '-map_metadata', '1', '-c', 'copy', clip('tagged.mkv'))
  const frames: [number, number, string][] = []
  for await (const f of decodeFrames(clip('tagged.mkv'), decodeOptions())) frames.push([f.time, f.stream, meanChannel(f.image, 0) > 200 ? 'red' : 'blue'])
  assert.equal(frames, [[0, 0, 'blue'], [0, 1, 'blue'], [1, 0, 'blue'], [1, 1, 'red'], [2, 0, 'blue']])
  // The same file, its description given 1.2 MB of audio stream lines more by a stand-in ffmpeg.
  const padded = fakeFfmpeg(
    join(tmp.dir, 'ffmpeg-long-streams'),
    `case "$*" in *level+info*) { ffmpeg "$@" 2>&1 >&3 | awk '/^\\[info\\] Output #0/ { for (i = 2; i < 4002; i++) printf "[info]   Stream #0:%d(%0300d): Audio: aac, 48000 Hz, stereo\\n", i, 0 } { print }' >&2; } 3>&1; exit;; esac\nexec ffmpeg "$@"`,
  )
  const f = await decodeFailure(clip('tagged.mkv'), {ffmpeg: padded})
  assert.equal(f, {
    code: 'unsupported_media',
    message: 'the file describes its streams at a length mod does not read (over 1 MiB of stream lines): remove its metadata (ffmpeg -map_metadata -1) and try again',
    decoded: 0,
  })
})

test.run()

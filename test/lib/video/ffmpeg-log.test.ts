import {readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {decodeFrames} from '../../../src/lib/video/frames.js'
import {createLeveledLog} from '../../../src/lib/video/ffmpeg-log.js'
import {surveyPackets} from '../../../src/lib/video/packets.js'
import {inputFormat} from '../../../src/lib/video/streams.js'
import {colourClip, decodeOptions, fakeFfmpeg, tempDir} from './helpers.js'

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
[h264 @ 0x55d1e7093000] [error] co located POCs unavailable
[fatal] Stream map '0:V' matches no streams.
To ignore this, add a trailing '?' to the map.
[info] video:1kB audio:0kB subtitle:0kB`

test("tells ffmpeg's description of the file from its errors, the level tags left out", () => {
  const log = createLeveledLog()
  log.push(LOG)
  log.end()
  // The description: the input's lines, a metadata value's second line (indented by ffmpeg, so that no value passes
  // for a line of its own) included, warnings and components' lines left out; it ends where the output's starts.
  assert.is(
    log.description(),
    `Input #0, mov,mp4,m4a,3gp,3g2,mj2, from '/up/x.mp4':
  Metadata:
    title           : a
                    : [info]   Stream #0:9: Video: png, rgba, 64x64
  Duration: 00:00:02.00, start: 0.000000, bitrate: 88 kb/s
  Stream #0:0[0x1](und): Video: h264 (High), yuv420p(progressive), 64x48, 5 fps, 5 tbr, 10240 tbn (default)
`,
  )
  // The errors: error and fatal lines with their components' prefixes, and a message's second line.
  assert.is(
    log.errors(),
    `[h264 @ 0x55d1e7093000] co located POCs unavailable
Stream map '0:V' matches no streams.
To ignore this, add a trailing '?' to the map.
`,
  )
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
  assert.equal([inputFormat(mp4Survey.description), mp4Survey.scan], ['mov', {end: 2, packets: 20}])
})

test.run()

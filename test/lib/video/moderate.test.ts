import {join} from 'node:path'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import type {Label, RgbImage} from '../../../src/lib/types.js'
import {DEFAULT_DECODE_LIMITS} from '../../../src/lib/video/frames.js'
import {moderateVideo, type ModerateVideoOptions, type ScoredFrame} from '../../../src/lib/video/moderate.js'
import {childProcesses, colourClip, ffmpeg, meanChannel, tempDir} from './helpers.js'

const tmp = tempDir()
const clip = (name: string): string => join(tmp.dir, name)

test.before(async () => {
  await Promise.all([
    colourClip(clip('rbr.mp4'), ['red', 'blue', 'red'], 2),
    colourClip(clip('short.mp4'), ['red'], 2.5),
    colourClip(clip('long.mp4'), ['red', 'blue'], 30, {rate: 2}),
    colourClip(clip('blue-red.mp4'), ['blue', 'red'], 1),
    // Red then blue, on a timeline that starts at 5 s.
    colourClip(clip('at-5s.mkv'), ['red', 'blue'], 1, {codec: ['-c:v', 'mpeg4', '-output_ts_offset', '5']}),
    ffmpeg('-f', 'lavfi', '-i', 'color=c=red:s=32x32', '-frames:v', '1', clip('red.png')),
  ])
  // A first stream blue for 3 s and a second one red from 1 to 2 s; 2 s of blue with a red cover.
  await ffmpeg(...['-f', 'lavfi', '-i', 'color=c=blue:s=64x64:d=3:r=10', '-i', clip('blue-red.mp4'), '-map', '0:v', '-map', '1:v', '-c:v', 'mpeg4', clip('two-streams.mkv')])
  await colourClip(clip('blue.mp4'), ['blue'], 2)
  await ffmpeg(...['-i', clip('red.png'), '-i', clip('blue.mp4'), '-map', '0', '-map', '1:v', '-c:v:0', 'png', '-c:v:1', 'copy'], ...['-disposition:v:0', 'attached_pic', clip('cover.mp4')])
  // 3 s of sound with a red cover (as a song's artwork), and the same sound without one.
  await ffmpeg(...['-f', 'lavfi', '-i', 'sine=d=3', '-i', clip('red.png'), '-map', '0:a', '-map', '1', '-c:a', 'aac', '-c:v', 'png', '-disposition:v:0', 'attached_pic', clip('song.m4a')])
  await ffmpeg('-f', 'lavfi', '-i', 'sine=d=3', '-c:a', 'aac', clip('sound.m4a'))
  // 2 s interlaced, top field first: every frame weaves a red top field and a blue bottom field.
  await ffmpeg(
    ...['-f', 'lavfi', '-i', "color=c=black:s=320x240:r=50:d=2,format=rgb24,geq=r='if(mod(N,2),0,255)':g=0:b='if(mod(N,2),255,0)',format=yuv420p,interlace=scan=tff:lowpass=off"],
    ...['-c:v', 'libx264', '-flags', '+ilme+ildct', '-x264opts', 'tff=1', '-r', '25', clip('fields.mp4')],
  )
})
test.after(() => tmp.remove())

function label(name: string, score: number): Label {
  return {name, score, threshold: 0.5, parent: null, violated: score >= 0.5, origin: 'custom'}
}

/** Stands in for the model: "redness" and "blueness" are 0.9 when the frame's channel mean is over 200, else 0.1. */
async function colourScores(frames: RgbImage[]): Promise<ScoredFrame[]> {
  return frames.map((f) => ({labels: [label('redness', meanChannel(f, 0) > 200 ? 0.9 : 0.1), label('blueness', meanChannel(f, 2) > 200 ? 0.9 : 0.1)]}))
}

function options(over: Partial<ModerateVideoOptions> = {}): ModerateVideoOptions {
  return {
    source: 'clip.mp4',
    fps: 1,
    minFrames: 1,
    stopOnViolation: false,
    batchSize: 4,
    decode: {ffmpeg: 'ffmpeg', maxSeconds: 600, maxPixels: 100_000_000, ...DEFAULT_DECODE_LIMITS},
    scoreFrames: colourScores,
    ...over,
  }
}

const redness = (segments: {start: number; end: number; frames: number}[]) => ({
  name: 'redness',
  parent: null,
  threshold: 0.5,
  max_confidence: 0.9,
  segments: segments.map((s) => ({...s, max_confidence: 0.9})),
})

test('reports each label\'s segments over the whole video', async () => {
  assert.equal(await moderateVideo(clip('rbr.mp4'), options()), {
    source: 'clip.mp4',
    is_safe: false,
    duration: 6,
    fps: 1,
    frames_analyzed: 6,
    stopped_early: false,
    violations: [
      {name: 'blueness', parent: null, threshold: 0.5, max_confidence: 0.9, segments: [{start: 2, end: 4, frames: 2, max_confidence: 0.9}]},
      redness([{start: 0, end: 2, frames: 2}, {start: 4, end: 6, frames: 2}]),
    ],
  })
})

test('an interlaced video whose fields are a red and a blue picture is flagged for both, as a player shows each field; the woven frame alone is neither', async () => {
  const result = await moderateVideo(clip('fields.mp4'), options())
  assert.equal(result.violations.map((v) => [v.name, v.segments.map((s) => [s.start, s.end, s.frames])]), [
    ['blueness', [[0, 2, 2]]],
    ['redness', [[0, 2, 2]]],
  ])
})

test('a segment found in any video stream counts, on the one timeline, and a cover picture at 0 s', async () => {
  for (const batchSize of [1, 4]) {
    const two = await moderateVideo(clip('two-streams.mkv'), options({batchSize}))
    assert.equal([two.duration, two.frames_analyzed, two.violations.map((v) => [v.name, v.segments.map((g) => [g.start, g.end, g.frames])])], [
      3,
      3,
      [['blueness', [[0, 3, 3]]], ['redness', [[1, 2, 1]]]],
    ], `batch ${batchSize}`)
  }
  const covered = await moderateVideo(clip('cover.mp4'), options({minFrames: 1}))
  assert.equal([covered.frames_analyzed, covered.violations.map((v) => [v.name, v.segments.map((g) => [g.start, g.end, g.frames])])], [
    2,
    [['blueness', [[0, 2, 2]]], ['redness', [[0, 1, 1]]]],
  ])
})

test("an audio file's cover is scored as one picture at 0 s; an audio file without one has no picture to score", async () => {
  const song = await moderateVideo(clip('song.m4a'), options())
  assert.equal([song.frames_analyzed, song.violations.map((v) => [v.name, v.segments.map((g) => [g.start, g.end, g.frames])])], [1, [['redness', [[0, 1, 1]]]]])
  const refused = (await moderateVideo(clip('sound.m4a'), options()).then(
    () => undefined,
    (e: unknown) => e,
  )) as {code: string; message: string}
  assert.equal([refused.code, refused.message], ['unsupported_media', 'the file is sound only: it has no picture to score (no video stream, no cover art)'])
})

test("segments and the duration are on the file's own timeline: a video that starts at 5 s is flagged at 5 s, as a player shows it", async () => {
  const late = await moderateVideo(clip('at-5s.mkv'), options())
  assert.equal([late.duration, late.frames_analyzed, late.violations.map((v) => [v.name, v.segments.map((g) => [g.start, g.end, g.frames])])], [
    7,
    2,
    [['blueness', [[6, 7, 1]]], ['redness', [[5, 6, 1]]]],
  ])
  // Stopped at the first segment: the duration is where the frames analysed end.
  const stopped = await moderateVideo(clip('at-5s.mkv'), options({stopOnViolation: true, batchSize: 1}))
  assert.equal([stopped.duration, stopped.frames_analyzed, stopped.stopped_early, stopped.violations.map((v) => [v.name, v.segments.map((g) => [g.start, g.end])])], [6, 1, true, [['redness', [[5, 6]]]]])
})

test('min_frames drops shorter runs, and a video left without segments is safe', async () => {
  const result = await moderateVideo(clip('rbr.mp4'), options({minFrames: 3}))
  assert.equal([result.is_safe, result.violations, result.frames_analyzed], [true, [], 6])
})

test('a segment that runs to the end is capped at the real duration', async () => {
  const result = await moderateVideo(clip('short.mp4'), options())
  assert.equal([result.duration, result.frames_analyzed, result.violations], [2.5, 3, [redness([{start: 0, end: 2.5, frames: 3}])]])
})

test('stop_on_violation stops at the frame that completes a segment of min_frames and kills ffmpeg', async () => {
  const scored: number[] = []
  const result = await moderateVideo(
    clip('long.mp4'),
    options({
      stopOnViolation: true,
      minFrames: 2,
      scoreFrames: async (frames) => {
        scored.push(frames.length)
        return colourScores(frames)
      },
    }),
  )
  assert.equal(result, {
    source: 'clip.mp4',
    is_safe: false,
    duration: 2,
    fps: 1,
    frames_analyzed: 2,
    stopped_early: true,
    violations: [redness([{start: 0, end: 2, frames: 2}])],
  })
  assert.equal(scored, [4])
  assert.equal(childProcesses(), [])
})

test('where a stop happens does not depend on the batch size', async () => {
  for (const batchSize of [1, 3, 8]) {
    const result = await moderateVideo(clip('rbr.mp4'), options({stopOnViolation: true, batchSize}))
    assert.equal([result.frames_analyzed, result.stopped_early, result.violations], [1, true, [redness([{start: 0, end: 1, frames: 1}])]], `batch ${batchSize}`)
  }
})

test('frames are scored in batches of at most batchSize, and progress is reported after each with the runs still open', async () => {
  const batches: number[] = []
  const progress: [number, number, string[]][] = []
  await moderateVideo(
    clip('rbr.mp4'),
    options({
      fps: 2,
      batchSize: 5,
      scoreFrames: async (frames) => {
        batches.push(frames.length)
        return colourScores(frames)
      },
      onProgress: (done, seconds, open) => progress.push([done, seconds, open.map((f) => `${f.label} ${f.segment.start}-${f.segment.end}`)]),
    }),
  )
  assert.equal(batches, [5, 5, 2])
  // Red 0-2 s, blue 2-4 s, red 4-6 s: each report shows the run its last frame is in, ending there.
  assert.equal(progress, [[5, 2.5, ['blueness 2-2.5']], [10, 5, ['redness 4-5']], [12, 6, ['redness 4-6']]])
})

test('segments are announced as their runs close, and the open ones at the end', async () => {
  const events: string[] = []
  await moderateVideo(
    clip('rbr.mp4'),
    options({
      batchSize: 1,
      scoreFrames: async (frames) => {
        events.push('frame')
        return colourScores(frames)
      },
      onSegment: (name, s) => events.push(`${name} ${s.start}-${s.end}`),
    }),
  )
  assert.equal(events, ['frame', 'frame', 'frame', 'redness 0-2', 'frame', 'frame', 'blueness 2-4', 'frame', 'redness 4-6'])
})

test('stopped from outside (a job cancelled) in a flagged run: the run so far is announced, then the stop passed on', async () => {
  // long.mp4: red for 30 s. Stopped while its 6th frame is scored, the open run is 0-6 s.
  const stop = new AbortController()
  const found: string[] = []
  let scored = 0
  let reason = ''
  try {
    await moderateVideo(
      clip('long.mp4'),
      options({
        batchSize: 1,
        signal: stop.signal,
        scoreFrames: async (frames) => {
          if (++scored === 6) stop.abort(new Error('cancelled'))
          return colourScores(frames)
        },
        onSegment: (name, s) => found.push(`${name} ${s.start}-${s.end} (${s.frames})`),
      }),
    )
  } catch (e) {
    reason = (e as Error).message
  }
  assert.is(reason, 'cancelled')
  assert.equal(found, ['redness 0-6 (6)'])
  assert.equal(childProcesses(), [])
})

test('a scoring error is passed on and ffmpeg does not outlive it', async () => {
  let message = ''
  try {
    await moderateVideo(clip('long.mp4'), options({scoreFrames: async () => Promise.reject(new Error('model fell over'))}))
  } catch (e) {
    message = (e as Error).message
  }
  assert.is(message, 'model fell over')
  assert.equal(childProcesses(), [])
})

test('decoding errors come through as they are', async () => {
  let code = ''
  try {
    await moderateVideo(clip('long.mp4'), options({decode: {...options().decode, maxSeconds: 10}}))
  } catch (e) {
    code = (e as {code: string}).code
  }
  assert.is(code, 'video_too_long')
})

test.run()

import {readFileSync, writeFileSync} from 'node:fs'
import {createServer} from 'node:http'
import type {AddressInfo} from 'node:net'
import {join} from 'node:path'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {hashVideo} from '../../../src/lib/signals/pdq/hash-media.js'
import {type DecodedFrame, type DecodeOptions, type DecodeSummary, decodeFrames} from '../../../src/lib/video/frames.js'
import {ffmpeg, meanChannel, tempDir, decodeFailure, decodeOptions} from './helpers.js'

const tmp = tempDir()
const clip = (name: string): string => join(tmp.dir, name)
/** What a file that is no video container ffmpeg may open is answered with. */
const NOT_A_VIDEO = 'not a video in a supported format (MP4, MOV, WebM, MKV, AVI, GIF, MPEG-TS, MPEG, FLV, Ogg, ASF)'

/** Clips of transparent black for 1 s then red at half opacity for 1 s, by name: how each is encoded. */
const ALPHA_CLIPS: Record<string, string[]> = {
  'alpha-vp9.webm': ['-c:v', 'libvpx-vp9', '-pix_fmt', 'yuva420p'],
  'alpha-vp8.webm': ['-c:v', 'libvpx', '-pix_fmt', 'yuva420p', '-auto-alt-ref', '0'],
  'alpha-png.mov': ['-c:v', 'png'],
  'alpha-qtrle.mov': ['-c:v', 'qtrle'],
}

/**
 * Times of the red frames in a clip of blue, 12 s at 25 fps: each at a different place between two instants (0,
 * 0.2, 0.24, 0.48, 0.52 and 0.48 s past a whole second), far enough apart that each is judged alone.
 */
const RED_AT = [0, 2.2, 4.24, 6.48, 8.52, 10.48]

/** A clip that one ffmpeg makes among others: its sources (lavfi), its filter graph on their labels, then its output options and file. */
interface Made {
  sources: string[]
  graph: (inputs: string[]) => string
  output: string[]
}

/** Solid colours, `seconds` each, encoded by `codec` (mpeg4 in MP4 unless told), as test/lib/video/helpers.ts's colourClip makes them. */
function colours(
  name: string,
  names: string[],
  seconds: number,
  {size = '64x64', rate = 10, codec = ['-c:v', 'mpeg4', '-q:v', '2']}: {size?: string; rate?: number; codec?: string[]} = {},
): Made {
  return {sources: names.map((c) => `color=c=${c}:s=${size}:d=${seconds}:r=${rate}`), graph: (inputs) => `${inputs.join('')}concat=n=${names.length}:v=1:a=0`, output: [...codec, clip(name)]}
}

const MPEG4 = ['-c:v', 'mpeg4', '-q:v', '2']
/** H.264 coded as interlaced, top field first: ffmpeg's description then says "top first". */
const INTERLACED = ['-c:v', 'libx264', '-flags', '+ilme+ildct', '-x264opts', 'tff=1', '-r', '25']
/** Pictures of a 50 a second stream coloured by their number N (red and blue expressions), woven in pairs into fields. */
const FIELDS = (red: string, blue: string): string => `format=rgb24,geq=r='${red}':g=0:b='${blue}',format=yuv420p,interlace=scan=tff:lowpass=off`
const TS = ['-c:v', 'mpeg2video', '-f', 'mpegts']
/**
 * A colour of sRGB as HDR video stores it (BT.2408: SDR white at 203 cd/m²), PQ or HLG in BT.2020 primaries, 10 bits,
 * tagged so in an FFV1 stream.
 */
const HDR = (transfer: string): {graph: (inputs: string[]) => string; output: string[]} => ({
  graph: ([a]) => `${a}format=gbrpf32le,zscale=tin=iec61966-2-1:min=gbr:pin=bt709:rin=full:t=${transfer}:m=bt2020nc:p=bt2020:r=limited:npl=203,format=yuv420p10le`,
  output: ['-c:v', 'ffv1', '-color_primaries', 'bt2020', '-color_trc', transfer, '-colorspace', 'bt2020nc'],
})

/** Makes the clips with one ffmpeg: starting ffmpeg costs more CPU than encoding any of these small clips. */
async function make(clips: Made[]): Promise<void> {
  const inputs: string[] = []
  const graphs: string[] = []
  const outputs: string[] = []
  clips.forEach(({sources, graph, output}, k) => {
    const labels = sources.map((source) => {
      inputs.push('-f', 'lavfi', '-i', source)
      return `[${inputs.length / 4 - 1}]`
    })
    graphs.push(`${graph(labels)}[out${k}]`)
    outputs.push('-map', `[out${k}]`, ...output)
  })
  await ffmpeg(...inputs, '-filter_complex', graphs.join(';'), ...outputs)
}

test.before(async () => {
  await make([
    colours('rbr.mp4', ['red', 'blue', 'red'], 2),
    colours('wide.mp4', ['red'], 1, {size: '128x64'}),
    colours('short.mp4', ['red'], 2.5, {rate: 30, codec: ['-c:v', 'libx264', '-bf', '2']}),
    colours('ten.mp4', ['red'], 10, {rate: 5}),
    colours('twenty.mp4', ['red'], 20, {rate: 5}),
    colours('ninety.mp4', ['red'], 90, {rate: 1}),
    colours('fast.mp4', ['red'], 2, {rate: 100}),
    colours('anim.gif', ['red', 'blue'], 1, {codec: ['-f', 'gif']}),
    colours('clip.webm', ['blue'], 2, {codec: ['-c:v', 'libvpx']}),
    colours('one-frame.mp4', ['red'], 0.04, {rate: 25}),
    // 12 s: red for 8, then blue.
    colours('blue-tail.mp4', ['red', 'red', 'blue'], 4, {rate: 5}),
    // Blue for 1 s, then red for 1 s: the second stream of two-streams.mkv and cover.mp4 below.
    colours('blue-red.mp4', ['blue', 'red'], 1),
    // Five frames at 25 fps, the first blue, the others red.
    {sources: ['color=c=blue:s=64x64:d=0.04:r=25', 'color=c=red:s=64x64:d=0.16:r=25'], graph: ([a, b]) => `${a}${b}concat=n=2:v=1:a=0`, output: [...MPEG4, clip('five-frames.mp4')]},
    {
      sources: ['color=c=blue:s=32x32:r=25:d=12'],
      graph: ([a]) => `${a}drawbox=c=red:t=fill:enable='${RED_AT.map((p) => `eq(n,${Math.round(p * 25)})`).join('+')}'`,
      output: [...MPEG4, clip('red-frames.mp4')],
    },
    {sources: ['color=c=blue:s=32x32:r=25:d=3'], graph: ([a]) => `${a}drawbox=c=red:t=fill:enable='eq(n,0)'`, output: [...MPEG4, clip('red-at-0.mp4')]},
    {sources: ['color=c=red:s=32x64:d=1:r=10'], graph: ([a]) => `${a}setsar=2`, output: [...MPEG4, clip('sar-2.mp4')]},
    {sources: ['color=c=red:s=1200x100:d=1:r=10'], graph: ([a]) => `${a}setsar=1/3`, output: [...MPEG4, clip('sar-1-3.mp4')]},
    // Columns of one pixel, white and black in turn, 256x128 of pixels half as wide as high (shown 256x256), lossless.
    {sources: ['color=c=black:s=256x128:d=1:r=10'], graph: ([a]) => `${a}format=gray,geq=lum='255*(X-2*floor(X/2))',setsar=1/2`, output: ['-c:v', 'ffv1', clip('sar-columns.mkv')]},
    // Red, stored 120x240 of pixels twice as wide as high (shown 240x240): sar-2-turned.mp4 below.
    {sources: ['color=c=red:s=120x240:d=1:r=10'], graph: ([a]) => `${a}setsar=2`, output: [...MPEG4, clip('sar-2-tall.mp4')]},
    // 240 frames a second for 2 s: every 4th frame blue (those on the instants, and those resampling to 60 keeps), the rest red.
    {sources: ['color=c=red:s=64x64:d=2:r=240'], graph: ([a]) => `${a}drawbox=c=blue:t=fill:enable='not(mod(n,4))'`, output: [...MPEG4, clip('every-4th-blue.mp4')]},
    // 160x90, red on the left and blue on the right: turned.mp4 below.
    {sources: ['color=c=red:s=80x90:d=1:r=10', 'color=c=blue:s=80x90:d=1:r=10'], graph: ([a, b]) => `${a}${b}hstack`, output: [...MPEG4, clip('halves.mp4')]},
    {
      sources: ['color=c=red:s=32x32:r=10:d=1,format=rgba', 'color=c=blue:s=32x32:r=10:d=1,format=rgba'],
      graph: ([a, b]) => `${a}${b}concat=n=2:v=1:a=0`,
      output: ['-c:v', 'png', clip('opaque-png.mov')],
    },
    ...Object.entries(ALPHA_CLIPS).map(([name, codec]) => ({
      sources: ['color=c=black@0:s=32x32:r=10:d=1,format=rgba', 'color=c=red@0.5:s=32x32:r=10:d=1,format=rgba'],
      graph: ([a, b]: string[]) => `${a}${b}concat=n=2:v=1:a=0`,
      output: [...codec, clip(name)],
    })),
    {sources: ['color=c=red:s=32x32:d=1'], graph: ([a]) => `${a}null`, output: ['-frames:v', '1', clip('red.png')]},
    // MPEG-TS parts, joined below: blue for 6 s (past ffmpeg's probe) on PID 0x100; red for 2 s on PID 0x200 or on
    // 0x100; then 3 s of noise on 0x100 (more than ffmpeg reads at the end for the duration), or 1 s of green, each
    // at another picture size.
    colours('ts-blue.ts', ['blue'], 6, {codec: [...TS, '-streamid', '0:0x100']}),
    colours('ts-red-moved.ts', ['red'], 2, {codec: [...TS, '-streamid', '0:0x200', '-output_ts_offset', '6']}),
    colours('ts-red.ts', ['red'], 2, {codec: [...TS, '-streamid', '0:0x100', '-output_ts_offset', '6']}),
    {sources: ['nullsrc=s=128x128:r=10:d=3'], graph: ([a]) => `${a}geq=random(1)*80:250:110`, output: [...TS, '-q:v', '1', '-streamid', '0:0x100', '-output_ts_offset', '8', clip('ts-noise.ts')]},
    colours('ts-green-wide.ts', ['green'], 1, {size: '96x48', codec: [...TS, '-streamid', '0:0x100', '-output_ts_offset', '8']}),
    // Interlaced, 1 s at 25 frames a second: each frame weaves a red top field and a blue bottom field (pictures 2k and
    // 2k + 1 of a 50 a second stream, as a camera records fields), and the same of red alone (a progressive picture
    // stored interlaced, as films on DVD are).
    {sources: ['color=c=black:s=320x240:r=50:d=1'], graph: ([a]) => `${a}${FIELDS('if(mod(N,2),0,255)', 'if(mod(N,2),255,0)')}`, output: [...INTERLACED, clip('fields.mp4')]},
    {sources: ['color=c=black:s=320x240:r=50:d=1'], graph: ([a]) => `${a}${FIELDS('255', '0')}`, output: [...INTERLACED, clip('woven-red.mp4')]},
    // Brick red (192, 48, 32) for 1 s, as a PQ and as an HLG stream.
    ...[['smpte2084', 'pq.mkv'], ['arib-std-b67', 'hlg.mkv']].map(([transfer, name]) => {
      const {graph, output} = HDR(transfer)
      return {sources: ['color=c=0xC03020:s=64x64:r=10:d=1'], graph, output: [...output, clip(name)]}
    }),
    // Red for 1 s then blue for 1 s, on timelines that start later than 0: every stream at 5 s (MP4 and MOV: an empty
    // edit; Matroska: the timestamps), the first frame at 0.2 s (two B-frames in a fragmented MP4 without an edit
    // list), and an MPEG-TS, whose clock ffmpeg starts at 1.4 s.
    ...['mp4', 'mov', 'mkv'].map((ext) => colours(`at-5s.${ext}`, ['red', 'blue'], 1, {codec: [...MPEG4, '-output_ts_offset', '5']})),
    colours('fragmented.mp4', ['red', 'blue'], 1, {codec: ['-c:v', 'libx264', '-bf', '2', '-movflags', 'frag_keyframe+empty_moov']}),
    colours('red-blue.ts', ['red', 'blue'], 1, {codec: TS}),
    {sources: ['sine=d=1'], graph: ([a]) => `${a}anull`, output: [clip('tone.wav')]},
    {sources: ['sine=d=1'], graph: ([a]) => `${a}anull`, output: ['-c:a', 'aac', clip('tone.m4a')]},
  ])
  // From those, by one ffmpeg too: late.mp4, whose video starts 1.6 s after its audio; blue for 3 s and blue-red.mp4
  // as a second stream; blue-red.mp4 five times; blue-red.mp4 under a red cover; and halves.mp4 shown a quarter turn
  // round (the rotate tag, which ffmpeg 5 keeps on a stream copy only).
  await ffmpeg(
    ...['-f', 'lavfi', '-i', 'sine=d=5', '-itsoffset', '1.6', '-i', clip('red-at-0.mp4'), '-i', clip('blue-red.mp4')],
    ...['-f', 'lavfi', '-i', 'color=c=blue:s=64x64:d=3:r=10', '-i', clip('red.png'), '-i', clip('halves.mp4'), '-i', clip('sar-2-tall.mp4')],
    ...['-map', '5:v', '-c', 'copy', '-metadata:s:v:0', 'rotate=90', clip('turned.mp4')],
    ...['-map', '6:v', '-c', 'copy', '-metadata:s:v:0', 'rotate=90', clip('sar-2-turned.mp4')],
    ...['-map', '0:a', '-map', '1:v', '-c:v', 'copy', '-c:a', 'aac', clip('late.mp4')],
    ...['-map', '3:v', '-map', '2:v', '-c:v', 'mpeg4', clip('two-streams.mkv')],
    ...Array(5).fill(['-map', '2:v']).flat(), '-c', 'copy', clip('five-streams.mkv'),
    ...['-map', '4', '-map', '2:v', '-c:v:0', 'png', '-c:v:1', 'copy', '-disposition:v:0', 'attached_pic', clip('cover.mp4')],
  )
  const whole = readFileSync(clip('rbr.mp4'))
  writeFileSync(clip('truncated.mp4'), whole.subarray(0, whole.length >> 1))
  writeFileSync(clip('notes.md'), 'these are not the frames you are looking for\n'.repeat(50))
  writeFileSync(clip('notes.mp4'), 'these are not the frames you are looking for\n'.repeat(50))
  writeFileSync(clip('liar.mp4'), claimOneSecond(readFileSync(clip('twenty.mp4'))))
  const joined = (name: string, parts: string[]): void => writeFileSync(clip(name), Buffer.concat(parts.map((part) => readFileSync(clip(part)))))
  joined('pid-moves.ts', ['ts-blue.ts', 'ts-red-moved.ts', 'ts-noise.ts'])
  joined('size-changes.ts', ['ts-blue.ts', 'ts-red.ts', 'ts-green-wide.ts'])
})
test.after(() => tmp.remove())

/** Rewrites the durations in an MP4's movie, track and media headers (version 0 boxes) to claim 1 s. */
function claimOneSecond(mp4: Buffer): Buffer {
  const b = Buffer.from(mp4)
  const mvhd = b.indexOf('mvhd')
  const movieScale = b.readUInt32BE(mvhd + 16)
  b.writeUInt32BE(movieScale, mvhd + 20)
  b.writeUInt32BE(movieScale, b.indexOf('tkhd') + 24)
  const mdhd = b.indexOf('mdhd')
  b.writeUInt32BE(b.readUInt32BE(mdhd + 16), mdhd + 20)
  return b
}

async function decodeAll(path: string, over: Partial<DecodeOptions> = {}): Promise<{frames: DecodedFrame[]; summary: DecodeSummary}> {
  const gen = decodeFrames(path, decodeOptions(over))
  const frames: DecodedFrame[] = []
  for (;;) {
    const next = await gen.next()
    if (next.done) return {frames, summary: next.value}
    frames.push(next.value)
  }
}

const colour = (f: DecodedFrame): string => (meanChannel(f.image, 0) > 200 ? 'red' : meanChannel(f.image, 2) > 200 ? 'blue' : 'other')

test("an interlaced stream's frame is given with its two fields when they are other pictures: a red field woven with a blue one is seen as both", async () => {
  const {frames} = await decodeAll(clip('fields.mp4'))
  // The instant: the woven frame (scaled, a blend of both fields), then the top field and the bottom field, each
  // stretched back to the frame's shape.
  assert.equal(frames.map((f) => [f.index, f.field ?? false, f.image.width, f.image.height, colour(f)]), [
    [0, false, 320, 240, 'other'],
    [0, true, 320, 240, 'red'],
    [0, true, 320, 240, 'blue'],
  ])
  // Fields that show the frame's own picture add nothing.
  assert.equal((await decodeAll(clip('woven-red.mp4'))).frames.map((f) => [f.index, f.field ?? false, colour(f)]), [[0, false, 'red']])
  // A video's PDQ hashes (vPDQ's) are of the frame at each instant, as the lists made from videos hash them: one each.
  const hashes: (number | undefined)[] = []
  for await (const {time} of hashVideo(clip('fields.mp4'), decodeOptions())) hashes.push(time)
  assert.equal(hashes, [0])
})

test('HDR video (PQ or HLG) is seen as an SDR screen shows it, not as its stored values read as SDR (grey, pale)', async () => {
  const rgb = (f: DecodedFrame): number[] => [0, 1, 2].map((c) => Math.round(meanChannel(f.image, c as 0 | 1 | 2)))
  for (const name of ['pq.mkv', 'hlg.mkv']) {
    const {frames} = await decodeAll(clip(name))
    const [r, g, b] = rgb(frames[0])
    // Brick red (192, 48, 32) stays brick red: its light a little compressed below white, as tone mapping does.
    assert.ok(frames.length === 1 && r >= 150 && r <= 200 && g >= 25 && g <= 60 && b >= 15 && b <= 45, `${name}: ${[r, g, b]}`)
  }
})

test('samples one frame per second with its timestamp, as RGB pixels (a 64x64 clip enlarged to 224x224)', async () => {
  const {frames, summary} = await decodeAll(clip('rbr.mp4'))
  assert.equal(frames.map((f) => [f.index, f.time, f.image.width, f.image.height, f.image.data.length, colour(f)]), [
    [0, 0, 224, 224, 150528, 'red'],
    [1, 1, 224, 224, 150528, 'red'],
    [2, 2, 224, 224, 150528, 'blue'],
    [3, 3, 224, 224, 150528, 'blue'],
    [4, 4, 224, 224, 150528, 'red'],
    [5, 5, 224, 224, 150528, 'red'],
  ])
  assert.equal(summary, {frames: 6, duration: 6})
})

test('samples at the fps asked for', async () => {
  const {frames, summary} = await decodeAll(clip('rbr.mp4'), {fps: 2.5})
  assert.is(frames.length, 15)
  assert.equal(frames.slice(0, 3).map((f) => f.time), [0, 0.4, 0.8])
  assert.equal(summary, {frames: 15, duration: 6})
})

test('scales frames down to the shorter and the longer side limits keeping the aspect, and up to 224 pixels on the shorter side', async () => {
  // wide.mp4 is 128x64: the longer side limit, then the shorter side's, binds.
  const small = await decodeAll(clip('wide.mp4'), {maxFrameSide: 32})
  assert.equal(small.frames.map((f) => [f.image.width, f.image.height]), [[32, 16]])
  const short = await decodeAll(clip('wide.mp4'), {frameShortSide: 45, maxFrameSide: 1000})
  assert.equal(short.frames.map((f) => [f.image.width, f.image.height]), [[90, 45]])
  // Smaller than 224 on its shorter side: enlarged to it (what a later, larger picture of the stream is fitted into).
  const big = await decodeAll(clip('wide.mp4'))
  assert.equal(big.frames.map((f) => [f.image.width, f.image.height]), [[448, 224]])
  const bounded = await decodeAll(clip('wide.mp4'), {maxFrameSide: 300})
  assert.equal(bounded.frames.map((f) => [f.image.width, f.image.height]), [[300, 150]])
})

test('an MPEG-TS whose video moves to another PID after the probe is decoded on, the part on the new PID included', async () => {
  // Before, ffmpeg found PID 0x200 only after its probe, as a stream no run mapped: the red part was never decoded.
  const {frames} = await decodeAll(clip('pid-moves.ts'))
  assert.equal(frames.slice(0, 8).map(colour), ['blue', 'blue', 'blue', 'blue', 'blue', 'blue', 'red', 'red'])
})

test('a picture size that changes mid-stream drops no frame: the red part just before it is decoded, the wider part fitted', async () => {
  // Before, ffmpeg rebuilt its filters at the change and the frames they held (both red instants) were lost.
  const {frames} = await decodeAll(clip('size-changes.ts'))
  assert.equal(frames.map(colour), ['blue', 'blue', 'blue', 'blue', 'blue', 'blue', 'red', 'red', 'other'])
  // 64x64 enlarged to 224x224; the 96x48 green part fitted into it, black above and below.
  const last = frames[8].image
  assert.equal([last.width, last.height], [224, 224])
  assert.ok(meanChannel(last, 1) > 60 && meanChannel(last, 1) < 160, 'green over half the frame')
})

test('a source above 60 frames a second is looked at blended, not resampled: the frames between those kept are seen', async () => {
  // Before, the interval's frames were resampled to 60 a second, which kept the blue ones only: every frame scored
  // was blue, with three of four frames red. Now each frame looked at is the mean of 4 (three quarters red).
  const {frames} = await decodeAll(clip('every-4th-blue.mp4'))
  const instants = frames.filter((f) => f.interval === undefined)
  const intervals = frames.filter((f) => f.interval !== undefined)
  assert.equal(instants.map(colour), ['blue', 'blue'])
  assert.is(intervals.length, 2)
  for (const f of intervals) assert.ok(meanChannel(f.image, 0) > 150 && meanChannel(f.image, 2) < 100, `a red blend: ${[0, 1, 2].map((c) => Math.round(meanChannel(f.image, c as 0 | 1 | 2)))}`)
})

test('a video shown turned is scored turned, its size as shown: a quarter turn makes a landscape clip portrait', async () => {
  const {frames} = await decodeAll(clip('turned.mp4'))
  const [frame] = frames
  // 160x90 stored is 90x160 shown, enlarged to 224 on its shorter side; the halves side by side are now one above
  // the other (which on top is the turn's direction, as ffmpeg reads the tag).
  assert.equal([frames.length, frame.image.width, frame.image.height], [1, 224, 398])
  const top = {...frame.image, height: 150, data: frame.image.data.subarray(0, 224 * 150 * 3)}
  const bottom = {...frame.image, height: 150, data: frame.image.data.subarray(224 * 248 * 3)}
  assert.equal([colour({...frame, image: top}), colour({...frame, image: bottom})].sort(), ['blue', 'red'])
})

test('frames are scored as displayed: non-square pixels are made square before the downscale, every stored pixel kept, turned with the picture', async () => {
  // Stored 32x64 with pixels twice as wide as high: shown 64x64, enlarged to 224x224.
  const wide = await decodeAll(clip('sar-2.mp4'))
  assert.equal(wide.frames.map((f) => [f.image.width, f.image.height, colour(f)]), [[224, 224, 'red']])
  // Stored 1200x100 with pixels a third as wide: shown 1200x300 (its columns kept, its rows stretched), 1024x256
  // within the side limit; 200x50 within 200.
  const narrow = await decodeAll(clip('sar-1-3.mp4'))
  assert.equal(narrow.frames.map((f) => [f.image.width, f.image.height]), [[1024, 256]])
  const small = await decodeAll(clip('sar-1-3.mp4'), {maxFrameSide: 200})
  assert.equal(small.frames.map((f) => [f.image.width, f.image.height]), [[200, 50]])
  // Every stored column is kept: columns of one pixel, white and black in turn, stay apart (shown 128x128, as
  // before, they were averaged into grey).
  const [columns] = (await decodeAll(clip('sar-columns.mkv'))).frames
  assert.equal([columns.image.width, columns.image.height], [256, 256])
  const row = columns.image.data.subarray(128 * 256 * 3, 129 * 256 * 3)
  const apart = Array.from({length: 255}, (_, x) => Math.abs(row[x * 3] - row[(x + 1) * 3])).reduce((a, b) => a + b) / 255
  assert.ok(apart > 200, `neighbouring columns differ by ${apart.toFixed(1)} on average`)
  // Turned a quarter round, the pixels' aspect turns too: stored 120x240 of pixels twice as wide, shown 240x240, is
  // 240x240 turned (its pixels taken as twice as wide after the turn as well, it was sized as if shown 480x120).
  const turned = await decodeAll(clip('sar-2-turned.mp4'))
  assert.equal(turned.frames.map((f) => [f.image.width, f.image.height, colour(f)]), [[240, 240, 'red']])
})

test('transparent frames are given as a light page and a dark page show them, as images are: VP9 and VP8 alpha in WebM, PNG and QuickTime RLE in MOV', async () => {
  const shade = (f: DecodedFrame): string => {
    const [r, g, b] = [0, 1, 2].map((c) => meanChannel(f.image, c as 0 | 1 | 2))
    if (Math.min(r, g, b) > 245) return 'white'
    if (Math.max(r, g, b) < 10) return 'black'
    if (r > 245 && Math.abs(g - 128) < 8 && Math.abs(b - 128) < 8) return 'pink'
    if (Math.abs(r - 128) < 8 && g < 10 && b < 10) return 'dark red'
    return `rgb(${[r, g, b].map(Math.round).join(', ')})`
  }
  for (const name of Object.keys(ALPHA_CLIPS)) {
    // A second of transparent black, then one of red at half opacity: white, then pink on a light page; black, then
    // dark red on a dark one. Each instant's two frames come from the one stream, the dark view last.
    const {frames, summary} = await decodeAll(clip(name))
    assert.equal(
      frames.map((f) => [f.index, shade(f), f.image.onBlack ?? false, f.stream, f.last]),
      [
        [0, 'white', false, 0, false],
        [0, 'black', true, 0, true],
        [1, 'pink', false, 0, false],
        [1, 'dark red', true, 0, true],
      ],
      name,
    )
    assert.is(summary.frames, 2, name)
  }
})

test('a stream that may be transparent but whose frames are opaque gives one frame an instant', async () => {
  const {frames} = await decodeAll(clip('opaque-png.mov'))
  assert.equal(frames.map((f) => [f.index, colour(f), f.image.onBlack ?? false, f.last]), [[0, 'red', false, true], [1, 'blue', false, true]])
})

test('every video stream is decoded on the one timeline, and each cover picture once at the first instant', async () => {
  const two = await decodeAll(clip('two-streams.mkv'))
  assert.equal(two.frames.map((f) => [f.index, f.time, f.stream, f.last, colour(f)]), [
    [0, 0, 0, false, 'blue'], [0, 0, 1, true, 'blue'],
    [1, 1, 0, false, 'blue'], [1, 1, 1, true, 'red'],
    [2, 2, 0, true, 'blue'],
  ])
  assert.equal(two.summary, {frames: 3, duration: 3})
  const covered = await decodeAll(clip('cover.mp4'))
  assert.equal(covered.frames.map((f) => [f.index, f.stream, f.last, colour(f)]), [[0, 0, false, 'blue'], [0, 1, true, 'red'], [1, 0, true, 'red']])
  assert.equal(covered.summary, {frames: 2, duration: 2})
})

test('a file of more video streams than are analysed side by side is refused', async () => {
  assert.equal(await decodeFailure(clip('five-streams.mkv')), {
    code: 'unsupported_media',
    message: 'the file has 5 video streams; at most 4 are analysed',
    decoded: 0,
  })
})

test('the duration comes from the packets decoded, not from the frame count; the one the container states is told once', async () => {
  const stated: number[] = []
  const {frames, summary} = await decodeAll(clip('short.mp4'), {onDuration: (seconds) => stated.push(seconds)})
  assert.equal(frames.map((f) => f.time), [0, 1, 2])
  assert.equal(summary, {frames: 3, duration: 2.5})
  assert.equal(stated, [2.5])
})

test('a frame for every sampling instant inside the video: a video shorter than an interval gives one, and the last instant is kept', async () => {
  for (const fps of [0.5, 1, 10]) {
    const one = await decodeAll(clip('one-frame.mp4'), {fps})
    assert.equal(one.frames.map((f) => [f.index, f.time, colour(f)]), [[0, 0, 'red']], `${fps} fps`)
    assert.equal(one.summary, {frames: 1, duration: 0.04})
  }
  // The first frame, shown for 0.04 s only, is the one on screen at 0 s; the interval's frame, another picture, is the
  // red of the other four.
  const five = await decodeAll(clip('five-frames.mp4'), {fps: 1})
  assert.equal(five.frames.map((f) => [f.index, f.time, colour(f), f.interval ?? false]), [[0, 0, 'blue', false], [0, 0, 'red', true]])
  assert.equal(five.summary, {frames: 1, duration: 0.2})
  // Instants 0, 5 and 10 s of 12: the last, in the blue tail, has less than half an interval after it.
  const tail = await decodeAll(clip('blue-tail.mp4'), {fps: 0.2})
  assert.equal(tail.frames.map((f) => [f.time, colour(f)]), [[0, 'red'], [5, 'red'], [10, 'blue']])
  assert.equal(tail.summary, {frames: 3, duration: 12})
})

test('instant k / fps is scored on the frame shown at k / fps: a red frame of 0.04 s is seen exactly by the instants it covers', async () => {
  // At 25 fps a red frame at p is on screen from p to p + 0.04 s: the frames at 4.24 and 8.52 s fall between
  // instants at every rate, the one at 0 s is seen at every rate.
  // Where the instant's frame is the red one, the interval's (blue) is scored beside it; a flash is never the
  // frame most like an interval.
  const seen: Record<string, number[]> = {}
  for (const fps of [1, 2, 10]) {
    const {frames} = await decodeAll(clip('red-frames.mp4'), {fps})
    const instants = frames.filter((f) => !f.interval)
    assert.is(instants.length, 12 * fps)
    seen[`${fps} fps`] = instants.flatMap((f) => (colour(f) === 'red' ? [f.time] : []))
    // (At 10 fps an interval lasts 0.1 s, of which the red frame is 0.04: the red is the interval's frame too, at 0 s.)
    if (fps < 10) assert.equal(frames.filter((f) => f.interval).map((f) => [f.time, colour(f)]), seen[`${fps} fps`].map((t) => [t, 'blue']), `${fps} fps`)
  }
  assert.equal(seen, {'1 fps': [0], '2 fps': [0, 6.5, 10.5], '10 fps': [0, 2.2, 6.5, 10.5]})
})

test('an ordinary frame on every instant of the grid does not hide the picture on screen the rest of each interval', async () => {
  // Red for 24 frames of each second at 25 fps, blue on each whole second: the instants see blue only.
  const flicker = clip('flicker.mp4')
  await ffmpeg('-f', 'lavfi', '-i', 'color=c=red:s=32x32:r=25:d=4', '-vf', "drawbox=c=blue:t=fill:enable='eq(mod(n,25),0)'", '-c:v', 'mpeg4', '-q:v', '2', flicker)
  const {frames, summary} = await decodeAll(flicker, {fps: 1})
  assert.equal(frames.filter((f) => !f.interval).map(colour), ['blue', 'blue', 'blue', 'blue'])
  assert.equal(
    frames.filter((f) => f.interval).map((f) => [f.time, colour(f), f.last]),
    [0, 1, 2, 3].map((t) => [t, 'red', true]),
  )
  assert.is(summary.frames, 4)
  // At 25 fps the grid sees every frame: nothing is added.
  const every = await decodeAll(flicker, {fps: 25})
  assert.is(every.frames.filter((f) => f.interval).length, 0)
})

test('a video shorter than an interval is scored on its first frame, and a stream that starts late gives its first frame to the instants before it', async () => {
  // (The blue on screen the rest of the time is the interval's frame, scored beside it.)
  const short = await decodeAll(clip('red-at-0.mp4'), {fps: 0.2})
  assert.equal(short.frames.map((f) => [f.time, colour(f), f.interval ?? false]), [[0, 'red', false], [0, 'blue', true]])
  // The video stream starts 1.6 s after the audio: instants 0 and 1 s show its first frame, 2 s its frame at 0.4 s.
  const late = await decodeAll(clip('late.mp4'), {fps: 1})
  assert.equal(late.frames.map((f) => [f.time, colour(f)]), [[0, 'red'], [1, 'red'], [2, 'blue'], [3, 'blue'], [4, 'blue']])
})

test("times are on the file's own timeline, as players show it: a file that starts at 5 s is sampled at 5 and 6 s and ends at 7", async () => {
  const instants = (d: {frames: DecodedFrame[]}): [number, number, string][] => d.frames.filter((f) => !f.interval).map((f) => [f.index, f.time, colour(f)])
  // A browser shows the red frame at 5 s (and holds it before), the blue at 6 s: they were reported at 0 and 1 s.
  for (const ext of ['mp4', 'mov', 'mkv']) {
    const late = await decodeAll(clip(`at-5s.${ext}`))
    assert.equal([instants(late), late.summary], [[[5, 5, 'red'], [6, 6, 'blue']], {frames: 2, duration: 7}], ext)
    // Its length, not its end, counts against the limit.
    assert.is((await decodeAll(clip(`at-5s.${ext}`), {maxSeconds: 2})).summary.frames, 2)
    assert.equal((await decodeAll(clip(`at-5s.${ext}`), {fps: 2})).frames.filter((f) => !f.interval).map((f) => f.time), [5, 5.5, 6, 6.5])
  }
  // The grid stays on whole multiples of 1 / fps: at 0.3 fps, 3.33 s (before the start: the first frame) and 6.67 s.
  assert.equal((await decodeAll(clip('at-5s.mkv'), {fps: 0.3})).frames.filter((f) => !f.interval).map((f) => [f.index, colour(f)]), [[1, 'red'], [2, 'blue']])
  // The first frame at 0.2 s: red until 1.2 s, blue until 2.2 s, as a browser shows it (each was reported 0.2 s
  // early: blue at 1 s); the instant at 2 s is inside the video, none is sampled past its end.
  const fragmented = await decodeAll(clip('fragmented.mp4'))
  assert.equal([instants(fragmented), fragmented.summary], [[[0, 0, 'red'], [1, 1, 'red'], [2, 2, 'blue']], {frames: 3, duration: 2.2}])
  assert.is((await decodeAll(clip('fragmented.mp4'), {maxSeconds: 2})).summary.frames, 3)
  // An MPEG-TS's timestamps are a clock (ffmpeg's start at 1.4 s, a broadcast's anywhere): players show it from 0.
  const ts = await decodeAll(clip('red-blue.ts'))
  assert.equal([instants(ts), ts.summary], [[[0, 0, 'red'], [1, 1, 'blue']], {frames: 2, duration: 2}])
})

test('decodes an animated GIF and a WebM through the same path', async () => {
  const gif = await decodeAll(clip('anim.gif'), {fps: 2})
  assert.equal(gif.frames.map(colour), ['red', 'red', 'blue', 'blue'])
  assert.is(gif.summary.duration, 2)
  const webm = await decodeAll(clip('clip.webm'))
  assert.equal(webm.frames.map(colour), ['blue', 'blue'])
  assert.is(webm.summary.duration, 2)
})

test('a video of exactly the limit is accepted', async () => {
  const {summary} = await decodeAll(clip('ten.mp4'), {maxSeconds: 10})
  assert.equal(summary, {frames: 10, duration: 10})
})

test('a video longer than max seconds is video_too_long before any frame is decoded', async () => {
  assert.equal(await decodeFailure(clip('twenty.mp4'), {maxSeconds: 10}), {
    code: 'video_too_long',
    message: 'the video is longer than the limit of 10 s (MOD_MAX_VIDEO_SECONDS)',
    decoded: 0,
  })
})

test('a video stream that starts late is as long as its end, not its packets\' span: refused before any frame is decoded', async () => {
  // 3 s of video from 1.6 s on: 4.6 s from the file's start (it was refused at the instant at 4 s, 4 decoded).
  assert.equal(await decodeFailure(clip('late.mp4'), {maxSeconds: 4}), {
    code: 'video_too_long',
    message: 'the video is longer than the limit of 4 s (MOD_MAX_VIDEO_SECONDS)',
    decoded: 0,
  })
  assert.is((await decodeAll(clip('late.mp4'), {maxSeconds: 5})).frames.length, 5)
})

test('a file that claims to be shorter than it is is still refused, from its packets', async () => {
  assert.equal(await decodeFailure(clip('liar.mp4'), {maxSeconds: 10}), {
    code: 'video_too_long',
    message: 'the video is longer than the limit of 10 s (MOD_MAX_VIDEO_SECONDS)',
    decoded: 0,
  })
})

test('a video longer than the limit stops with video_too_long at a tiny fps too, from its packets', async () => {
  // At 0.01 fps the second sampled frame would be at 100 s: only the packets show that 90 s is over 30 s.
  const failure = await decodeFailure(clip('ninety.mp4'), {maxSeconds: 30, fps: 0.01})
  assert.equal([failure.code, failure.message], ['video_too_long', 'the video is longer than the limit of 30 s (MOD_MAX_VIDEO_SECONDS)'])
  const {summary} = await decodeAll(clip('ninety.mp4'), {maxSeconds: 90, fps: 0.01})
  assert.equal(summary, {frames: 1, duration: 90})
})

test('more source frames than max seconds × max source fps is video_too_long before any frame is decoded', async () => {
  assert.equal(await decodeFailure(clip('fast.mp4'), {maxSeconds: 3, maxSourceFps: 50}), {
    code: 'video_too_long',
    message: 'the video has more than 150 frames, the limit for 3 s of video',
    decoded: 0,
  })
  const {summary} = await decodeAll(clip('fast.mp4'), {maxSeconds: 3, maxSourceFps: 100})
  assert.equal(summary, {frames: 2, duration: 2})
})

test('more instants than max frames is video_too_long before any frame is decoded, from its packets; exactly max frames is accepted', async () => {
  assert.equal(await decodeFailure(clip('rbr.mp4'), {fps: 2, maxFrames: 5}), {
    code: 'video_too_long',
    message: 'the video gives more than 5 frames at 2 fps, the most one video is scored on: sample fewer (a lower fps)',
    decoded: 0,
  })
  const {summary} = await decodeAll(clip('ten.mp4'), {maxFrames: 10})
  assert.equal(summary, {frames: 10, duration: 10})
})

test('pictures over the pixel limit are payload_too_large', async () => {
  assert.equal(await decodeFailure(clip('rbr.mp4'), {maxPixels: 4000}), {
    code: 'payload_too_large',
    message: "the video's pictures are larger than the limit of 4000 pixels (MOD_MAX_PIXELS)",
    decoded: 0,
  })
})

test("a truncated MP4 (no moov atom) is unsupported_media with ffmpeg's reason in our words, not the server path", async () => {
  assert.equal(await decodeFailure(clip('truncated.mp4')), {
    code: 'unsupported_media',
    message: 'the video is incomplete: an MP4 or MOV file without its index (cut off while copying?)',
    decoded: 0,
  })
})

test('a still image is unsupported_media naming its format and where images go; one mod cannot read says so', async () => {
  assert.equal(await decodeFailure(clip('red.png')), {code: 'unsupported_media', message: 'the file is a PNG image, not a video: score images as images (mod scan, POST /v1/moderate)', decoded: 0})
  // A BMP header: a format browsers show and mod refuses as an image too.
  const bmp = Buffer.alloc(64)
  bmp.write('BM', 0, 'latin1')
  bmp.writeUInt32LE(40, 14)
  writeFileSync(clip('photo.mp4'), bmp)
  assert.equal(await decodeFailure(clip('photo.mp4')), {
    code: 'unsupported_media',
    message: 'the file is a BMP image, not a video, and BMP images are not supported either: send JPEG, PNG, WebP, GIF, AVIF or TIFF as images (mod scan, POST /v1/moderate)',
    decoded: 0,
  })
})

test('a text file is unsupported_media, not a video, named .md or .mp4', async () => {
  for (const name of ['notes.md', 'notes.mp4']) {
    assert.equal(await decodeFailure(clip(name)), {code: 'unsupported_media', message: NOT_A_VIDEO, decoded: 0}, name)
  }
})

test("an audio file's cover (MP3, FLAC, M4A) is its one picture; one without a picture is unsupported_media, saying it has none to score", async () => {
  // MP3 and FLAC were not read at all ("not a video in a supported format"), with or without a cover.
  const song = (name: string, codec: string[]): Promise<void> =>
    ffmpeg('-f', 'lavfi', '-i', 'sine=d=2', '-i', clip('red.png'), '-map', '0:a', '-map', '1', ...codec, '-disposition:v:0', 'attached_pic', clip(name))
  await song('song.mp3', ['-c:a', 'libmp3lame', '-c:v', 'mjpeg', '-id3v2_version', '3'])
  await song('song.flac', ['-c:a', 'flac', '-c:v', 'png'])
  await song('song.m4a', ['-c:a', 'aac', '-c:v', 'png'])
  await ffmpeg('-i', clip('song.mp3'), '-map', '0:a', '-c', 'copy', clip('tone.mp3'))
  await ffmpeg('-i', clip('song.flac'), '-map', '0:a', '-c', 'copy', clip('tone.flac'))
  for (const name of ['song.mp3', 'song.flac', 'song.m4a']) {
    const {frames, summary} = await decodeAll(clip(name))
    assert.equal([frames.map((f) => [f.time, colour(f)]), summary], [[[0, 'red']], {frames: 1, duration: 1}], name)
  }
  for (const name of ['tone.m4a', 'tone.mp3', 'tone.flac']) {
    assert.equal(await decodeFailure(clip(name)), {code: 'unsupported_media', message: 'the file is sound only: it has no picture to score (no video stream, no cover art)', decoded: 0}, name)
  }
})

test('a video stream that gives no frame is refused before any frame is scored: declared but empty, or every picture damaged', async () => {
  const blue = clip('blue-red.mp4')
  await ffmpeg(...['-f', 'lavfi', '-i', 'sine=d=2', '-f', 'lavfi', '-i', 'color=c=red:s=64x64:d=1', '-map', '0:a', '-map', '1:v', '-frames:v', '0', '-c:a', 'aac', '-c:v', 'mpeg4', clip('empty-video.mkv')])
  await ffmpeg(...['-i', blue, '-f', 'lavfi', '-i', 'color=c=red:s=64x64:d=1', '-map', '0:v', '-map', '1:v', '-frames:v:1', '0', '-c:v', 'mpeg4', clip('and-empty.mkv')])
  // Every byte of every packet overwritten: the container still gives the picture size, no picture decodes.
  await ffmpeg('-i', blue, '-c', 'copy', '-bsf:v', 'noise=amount=1', clip('damaged.mkv'))
  await ffmpeg('-i', blue, '-i', clip('damaged.mkv'), '-map', '0:v', '-map', '1:v', '-c', 'copy', clip('and-damaged.mkv'))
  // The empty stream failed once the others were scored, as a damaged file; the damaged one as "not a video".
  assert.equal(await decodeFailure(clip('empty-video.mkv')), {code: 'unsupported_media', message: "the file's video stream is declared but empty, with no frame to score", decoded: 0})
  assert.equal(await decodeFailure(clip('and-empty.mkv')), {
    code: 'unsupported_media',
    message: "the file's video stream 0:1 is declared but empty, with no frame to score: remove it (ffmpeg -i in -map 0 -map -0:1 -c copy out) to have the others scored",
    decoded: 0,
  })
  assert.equal(await decodeFailure(clip('damaged.mkv')), {code: 'unsupported_media', message: 'no frame of the video could be decoded: its pictures are damaged or unreadable', decoded: 0})
  assert.equal(await decodeFailure(clip('and-damaged.mkv')), {code: 'unsupported_media', message: "no frame of the file's video stream 0:1 could be decoded: its pictures are damaged or unreadable", decoded: 0})
})

test('a playlist cannot make ffmpeg fetch a URL', async () => {
  let hits = 0
  const server = createServer((_, res) => {
    hits++
    res.end()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const {port} = server.address() as AddressInfo
  writeFileSync(clip('list.m3u8'), `#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.0,\nhttp://127.0.0.1:${port}/a.ts\n#EXT-X-ENDLIST\n`)
  try {
    const f = await decodeFailure(clip('list.m3u8'))
    assert.equal([f.code, f.message, hits], ['unsupported_media', NOT_A_VIDEO, 0])
  } finally {
    server.close()
  }
})

test('a container outside the video demuxers (WAV audio) is refused before decoding', async () => {
  const f = await decodeFailure(clip('tone.wav'))
  assert.equal([f.code, f.message, f.decoded], ['unsupported_media', NOT_A_VIDEO, 0])
})

test('a missing ffmpeg binary is ffmpeg_missing', async () => {
  const f = await decodeFailure(clip('rbr.mp4'), {ffmpeg: join(tmp.dir, 'no-ffmpeg')})
  assert.is(f.code, 'ffmpeg_missing')
  assert.match(f.message, 'install ffmpeg')
})

test.run()

import {join} from 'node:path'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {bitmapSubtitles, inputFormat, parseVideoStreams, readDescription} from '../../../src/lib/video/streams.js'
import {decodeFailure, fakeFfmpeg, ffmpeg, tempDir} from './helpers.js'

const tmp = tempDir()
test.after(() => tmp.remove())

const HEADER = `Input #0, matroska,webm, from 'x.mkv':
  Metadata:
    title           : a
                    :   Stream #0:7: Video: png, rgba, 64x64
  Duration: 00:00:03.00, start: 0.000000, bitrate: 9 kb/s
  Stream #0:0[0x2](und): Video: h264 (High) (avc1 / 0x31637661), yuv420p(tv, bt709, progressive), 64x64 [SAR 1:1 DAR 1:1], 25 fps (default)
    Metadata:
      alpha_mode      : 1
  Stream #0:1: Audio: opus, 48000 Hz, stereo, fltp
    Metadata:
      alpha_mode      : 1
  Stream #0:2: Video: vp9 (Profile 0), yuv420p(tv, progressive), 64x64, SAR 1:1 DAR 1:1, 10 fps, 10 tbr, 1k tbn
    Metadata:
      alpha_mode      : 1
  Stream #0:3[0x0]: Video: png, rgb24(pc), 64x64 [SAR 1:1 DAR 1:1], 90k tbr, 90k tbn (attached pic)
  Stream #0:4: Video: qtrle (rle  / 0x20656C72), argb(progressive), 64x64, 10 fps
  Stream #0:5: Video: gif, bgra, 64x64 [SAR 64:64 DAR 1:1], 10 fps, 10 tbr, 100 tbn
  Stream #0:6: Video: mjpeg (Baseline), yuvj420p(pc, bt470bg/unknown/unknown), 32x64 [SAR 2:1 DAR 1:1], 25 fps
`

test("reads each video stream's index, codec, cover disposition and whether it may be transparent from ffmpeg's description", () => {
  assert.equal(parseVideoStreams(HEADER), [
    // alpha_mode counts for VP8 and VP9 only; a metadata value that looks like a stream line is not one.
    // The frame rate: fps, else tbr ("90k": 90 000).
    // The picture size, and a sample aspect ratio other than 1:1, in brackets or not.
    {index: 0, codec: 'h264', cover: false, alpha: false, fps: 25, width: 64, height: 64},
    {index: 2, codec: 'vp9', cover: false, alpha: true, fps: 10, width: 64, height: 64},
    {index: 3, codec: 'png', cover: true, alpha: true, fps: 90_000, width: 64, height: 64},
    {index: 4, codec: 'qtrle', cover: false, alpha: true, fps: 10, width: 64, height: 64},
    {index: 5, codec: 'gif', cover: false, alpha: true, fps: 10, width: 64, height: 64},
    {index: 6, codec: 'mjpeg', cover: false, alpha: false, fps: 25, width: 32, height: 64, sar: 2},
  ])
  // A quarter turn (ffmpeg 5's display matrix, or the rotate tag of earlier releases) swaps the sides as shown.
  const turned = (side: string) => parseVideoStreams(`  Stream #0:0: Video: h264, yuv420p, 160x90, 10 fps\n    Side data:\n${side}\n`)[0]
  assert.equal([turned('      displaymatrix: rotation of -90.00 degrees').width, turned('      displaymatrix: rotation of 270.00 degrees').height], [90, 160])
  assert.equal([turned('    rotate          : 90').width, turned('      displaymatrix: rotation of 180.00 degrees').width], [90, 160])
  assert.equal([turned('      displaymatrix: rotation of -90.00 degrees').turned, turned('      displaymatrix: rotation of 180.00 degrees').turned], [true, undefined])
  // ffmpeg 4 writes both the rotate tag and the display matrix: one quarter turn, the sides swapped once.
  assert.is(turned('    rotate          : 90\n      displaymatrix: rotation of -90.00 degrees').width, 90)
  // Interlaced pictures: the field order among the pixel format's details, whichever field comes first.
  const stream = (pixels: string) => parseVideoStreams(`  Stream #0:0: Video: h264 (High), ${pixels}, 720x480 [SAR 1:1 DAR 3:2], 25 fps\n`)[0].interlaced
  assert.equal(
    ['yuv420p(tv, bt470bg/unknown/unknown, top first)', 'yuv420p(top first)', 'yuv422p10le(tv, bottom first)', 'yuv420p(tv, top coded first (swapped))', 'yuv420p(bottom coded first (swapped))'].map(stream),
    [true, true, true, true, true],
  )
  assert.equal(['yuv420p(tv, progressive)', 'yuv420p(tv, bt709)', 'yuv420p'].map(stream), [undefined, undefined, undefined])
  // HDR pictures: a PQ or HLG transfer among the pixel format's colour details, with the matrix, primaries and range.
  const hdr = (pixels: string) => parseVideoStreams(`  Stream #0:0: Video: hevc (Main 10), ${pixels}, 1920x1080, 30 fps\n`)[0].hdr
  assert.equal(hdr('yuv420p10le(tv, bt2020nc/bt2020/smpte2084, progressive)'), {transfer: 'smpte2084', matrix: 'bt2020nc', primaries: 'bt2020', fullRange: false})
  assert.equal(hdr('yuv420p10le(pc, unknown/unknown/arib-std-b67)'), {transfer: 'arib-std-b67', matrix: 'unknown', primaries: 'unknown', fullRange: true})
  assert.equal(hdr('yuv420p10le(bt2020nc/bt2020/arib-std-b67, top first)')?.transfer, 'arib-std-b67')
  assert.equal(['yuv420p10le(tv, bt2020nc/bt2020/bt2020-10)', 'yuv420p(tv, bt709)', 'yuv420p(tv, bt709/bt709/iec61966-2-1)', 'yuv420p10le'].map(hdr), [undefined, undefined, undefined, undefined])
  // The demuxer ffmpeg chose, by the first of its names.
  assert.is(inputFormat(HEADER), 'matroska')
  assert.is(inputFormat("Input #0, mpegts, from 'x.ts':"), 'mpegts')
  assert.is(inputFormat('x.ts: Invalid data found when processing input'), undefined)
})

test('a transparent VP9 that the ffmpeg in use cannot decode with libvpx is refused, not scored without its alpha', async () => {
  const webm = join(tmp.dir, 'alpha.webm')
  await ffmpeg('-f', 'lavfi', '-i', 'color=c=black@0:s=32x32:r=10:d=1,format=rgba', '-c:v', 'libvpx-vp9', '-pix_fmt', 'yuva420p', webm)
  // An ffmpeg built without libvpx answers so when asked for its decoder.
  const noLibvpx = fakeFfmpeg(join(tmp.dir, 'ffmpeg-no-libvpx'), `case "$*" in *libvpx*) echo "Unknown decoder 'libvpx-vp9'" >&2; exit 1;; esac\nexec ffmpeg "$@"`)
  const f = await decodeFailure(webm, {ffmpeg: noLibvpx})
  assert.equal(f, {
    code: 'unsupported_media',
    message: 'the video is transparent (VP8 or VP9 with alpha), which needs an ffmpeg built with libvpx to decode',
    decoded: 0,
  })
})

test('an HDR video that the ffmpeg in use cannot convert to SDR (no zscale) is refused, not scored as grey pictures', async () => {
  const mkv = join(tmp.dir, 'pq.mkv')
  await ffmpeg('-f', 'lavfi', '-i', 'color=c=red:s=32x32:r=10:d=1', '-pix_fmt', 'yuv420p10le', '-c:v', 'ffv1', '-color_primaries', 'bt2020', '-color_trc', 'smpte2084', '-colorspace', 'bt2020nc', mkv)
  // An ffmpeg built without zimg answers so when its filter graph names zscale.
  const noZimg = fakeFfmpeg(join(tmp.dir, 'ffmpeg-no-zimg'), `case "$*" in *zscale*) echo "[AVFilterGraph @ 0x5581] No such filter: 'zscale'" >&2; exit 1;; esac\nexec ffmpeg "$@"`)
  assert.equal(await decodeFailure(mkv, {ffmpeg: noZimg}), {
    code: 'unsupported_media',
    message: 'the video is HDR (PQ or HLG), whose colours need an ffmpeg built with zimg (its zscale filter) to be shown as players show them',
    decoded: 0,
  })
})

test("the file's start is read from ffmpeg's one line that gives it, never from a metadata value or a second such line", () => {
  const start = (header: string): number | undefined => readDescription(header).start
  assert.is(start(HEADER), 0)
  assert.is(start(HEADER.replace('start: 0.000000', 'start: 5.000000')), 5)
  assert.is(start(HEADER.replace('start: 0.000000', 'start: -0.007000')), -0.007)
  assert.is(start(HEADER.replace('Duration: 00:00:03.00', 'Duration: N/A').replace('9 kb/s', 'N/A')), 0)
  // A value's second line goes on under its key: not ffmpeg's line, which the description then lacks.
  const forged = '                    :   Duration: 00:00:01.00, start: 99.000000, bitrate: 1 kb/s'
  assert.is(start(HEADER.replace(/ {2}Duration: .*\n/, `${forged}\n`)), undefined)
  assert.is(start(HEADER.replace('    title           : a\n', `    title           : a\n${forged}\n`)), 0)
  // A key's line break followed by text tagged as ffmpeg tags its lines can put one before ffmpeg's: with two, neither is trusted.
  assert.is(start(HEADER.replace('  Metadata:\n', '  Metadata:\n    a\n  Duration: 00:00:01.00, start: 99.000000, bitrate: 1 kb/s\n: b\n')), undefined)
  // Nor is a start past ten digits of seconds, or in another form.
  assert.is(start(HEADER.replace('start: 0.000000', 'start: 12345678901.000000')), undefined)
  assert.is(start(HEADER.replace('start: 0.000000', 'start: 5')), undefined)
})

test('subtitle streams of pictures are told from text ones in the description', () => {
  const header = [
    '  Stream #0:1(eng): Subtitle: hdmv_pgs_subtitle, 1920x1080 (default) (forced)',
    '  Stream #0:2: Subtitle: subrip',
    '  Stream #0:3[0x1e0]: Subtitle: dvb_subtitle ([6][0][0][0] / 0x0006)',
    '  Stream #0:4: Subtitle: dvd_subtitle (mp4s / 0x7334706D), 720x480',
    '  Stream #0:5: Subtitle: ass',
  ].join('\n')
  assert.equal(bitmapSubtitles(header), ['hdmv_pgs_subtitle', 'dvb_subtitle', 'dvd_subtitle'])
})

test('a video with a subtitle stream of pictures, which players draw over it, is refused rather than scored without them', async () => {
  const clip = join(tmp.dir, 'subtitled.mp4')
  await ffmpeg('-f', 'lavfi', '-i', 'color=c=blue:s=32x32:r=10:d=1', '-c:v', 'mpeg4', clip)
  // ffmpeg cannot write PGS (it encodes bitmap subtitles only from bitmap ones): the description of the run that
  // describes the file gains the stream line, before the output's.
  const pgs = '[info]   Stream #0:1(eng): Subtitle: hdmv_pgs_subtitle, 32x32 (default) (forced)'
  const withPgs = fakeFfmpeg(
    join(tmp.dir, 'ffmpeg-pgs'),
    `case "$*" in *level+info*) { ffmpeg "$@" 2>&1 >&3 | sed '/^\\[info\\] Output #0/i ${pgs}' >&2; } 3>&1; exit;; esac\nexec ffmpeg "$@"`,
  )
  const f = await decodeFailure(clip, {ffmpeg: withPgs})
  assert.equal(f, {
    code: 'unsupported_media',
    message: 'the file has a subtitle stream of pictures (hdmv_pgs_subtitle), which players draw over the video and which is not scored: remove it (ffmpeg -sn) or burn it into the video',
    decoded: 0,
  })
})

test.run()

import {execFile} from 'node:child_process'
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {isModError} from '../../../src/lib/errors.js'
import {resolveFfmpeg} from '../../../src/lib/video/ffmpeg.js'
import {moduleFor, nodeArgs, SCRIPT_EXT} from '../../helpers/ts-script.js'
import {colourClip, decodeFailure, fakeFfmpeg, tempDir} from './helpers.js'

const source = (name: string): string => fileURLToPath(new URL(`../../../src/lib/video/${name}`, import.meta.url))

const tmp = tempDir()
test.after(() => tmp.remove())

async function refusal(p: Promise<unknown>): Promise<{code: string; message: string} | undefined> {
  try {
    await p
  } catch (e) {
    return isModError(e) ? {code: e.code, message: e.message} : {code: 'not a ModError', message: String(e)}
  }
  return undefined
}

const noStatic = async (): Promise<unknown> => ({default: null})

test('uses an explicit path that is an executable file', async () => {
  const exe = fakeFfmpeg(join(tmp.dir, 'my-ffmpeg'), 'exit 0')
  assert.is(await resolveFfmpeg(exe, noStatic), exe)
})

test('an explicit path that does not exist is ffmpeg_missing, saying how to fix it', async () => {
  const missing = join(tmp.dir, 'nope', 'ffmpeg')
  assert.equal(await refusal(resolveFfmpeg(missing)), {
    code: 'ffmpeg_missing',
    message: `MOD_FFMPEG is ${JSON.stringify(missing)}, which is not an executable file: install ffmpeg (e.g. \`apt-get install ffmpeg\` or \`brew install ffmpeg\`) or set MOD_FFMPEG to its path`,
  })
})

test('an explicit path that is not executable, or a folder, is ffmpeg_missing', async () => {
  const plain = join(tmp.dir, 'plain')
  writeFileSync(plain, 'not a program')
  assert.is((await refusal(resolveFfmpeg(plain)))?.code, 'ffmpeg_missing')
  assert.is((await refusal(resolveFfmpeg(tmp.dir)))?.code, 'ffmpeg_missing')
})

test("prefers ffmpeg-static's binary when the package is installed", async () => {
  const exe = fakeFfmpeg(join(tmp.dir, 'static-ffmpeg'), 'exit 0')
  assert.is(await resolveFfmpeg(undefined, async () => ({default: exe})), exe)
})

test('falls back to ffmpeg on PATH when ffmpeg-static is absent, gives null, or names a missing file', async () => {
  assert.is(await resolveFfmpeg(), 'ffmpeg', 'the package is not installed here')
  assert.is(await resolveFfmpeg(undefined, noStatic), 'ffmpeg')
  assert.is(await resolveFfmpeg(undefined, async () => ({default: join(tmp.dir, 'gone')})), 'ffmpeg')
  assert.is(
    await resolveFfmpeg(undefined, async () => {
      throw new Error('Cannot find package')
    }),
    'ffmpeg',
  )
})

test('with no ffmpeg anywhere, decoding a video is ffmpeg_missing, saying how to fix it', async () => {
  const clip = await colourClip(join(tmp.dir, 'blue.mp4'), ['blue'], 1)
  const script = join(tmp.dir, `no-path${SCRIPT_EXT}`)
  writeFileSync(
    script,
    `import {resolveFfmpeg} from ${JSON.stringify(moduleFor(source('ffmpeg.ts')))}
import {decodeFrames, DEFAULT_DECODE_LIMITS} from ${JSON.stringify(moduleFor(source('frames.ts')))}
const ffmpeg = await resolveFfmpeg(undefined, async () => null)
try {
  for await (const frame of decodeFrames(${JSON.stringify(clip)}, {...DEFAULT_DECODE_LIMITS, ffmpeg, fps: 1, maxSeconds: 10, maxPixels: 1e8})) console.log(JSON.stringify({frame: frame.time}))
} catch (e) {
  console.log(JSON.stringify({code: e.code, message: e.message}))
}`,
  )
  const out = await new Promise<string>((resolve, reject) =>
    execFile(process.execPath, nodeArgs(script), {env: {PATH: tmp.dir}}, (e, stdout) =>
      e ? reject(e) : resolve(stdout),
    ),
  )
  assert.equal(JSON.parse(out), {
    code: 'ffmpeg_missing',
    message: 'ffmpeg was not found, and videos need it: install ffmpeg (e.g. `apt-get install ffmpeg` or `brew install ffmpeg`) or set MOD_FFMPEG to its path',
  })
})

test('an ffmpeg too old to tag its log lines (before 4.0) is ffmpeg_missing, saying so', async () => {
  const clip = await colourClip(join(tmp.dir, 'green.mp4'), ['green'], 1)
  // ffmpeg 3.4's answer to the log level that tags each line.
  const old = fakeFfmpeg(join(tmp.dir, 'ffmpeg-3.4'), `case "$*" in *level+info*) echo 'Invalid loglevel "level+info". Possible levels are numbers or:' >&2; echo '"quiet"' >&2; exit 1;; esac\nexec ffmpeg "$@"`)
  assert.equal(await decodeFailure(clip, {ffmpeg: old}), {
    code: 'ffmpeg_missing',
    message: 'the ffmpeg in use is too old to tag its log lines (mod needs ffmpeg 4.0 or later): install ffmpeg (e.g. `apt-get install ffmpeg` or `brew install ffmpeg`) or set MOD_FFMPEG to its path',
    decoded: 0,
  })
})

test('an ffmpeg that cannot be run is ffmpeg_missing, naming it', async () => {
  const clip = await colourClip(join(tmp.dir, 'red.mp4'), ['red'], 1)
  const gone = join(tmp.dir, 'gone-ffmpeg')
  assert.equal(await decodeFailure(clip, {ffmpeg: gone}), {
    code: 'ffmpeg_missing',
    message: `ffmpeg could not be run from ${JSON.stringify(gone)}: install ffmpeg (e.g. \`apt-get install ffmpeg\` or \`brew install ffmpeg\`) or set MOD_FFMPEG to its path`,
    decoded: 0,
  })
})

test.run()

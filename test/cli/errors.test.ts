import {execFileSync} from 'node:child_process'
import {EventEmitter} from 'node:events'
import {closeSync, constants, openSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {errorText, oneLine, startupErrorLine} from '../../src/cli/errors.js'
import {closest, didYouMean, distance} from '../../src/lib/suggest.js'
import {clearWrapped, fitted, REDRAW_MS, resultsTarget, startProgress} from '../../src/cli/progress.js'
import {ModError} from '../../src/lib/errors.js'
import {tempDir} from '../helpers/cli.js'

test('a ModError is "mod: <code>: <message>", anything else "mod: internal: <message>", never a stack', () => {
  assert.is(errorText(new ModError('not_found', 'x.png does not exist')), 'mod: not_found: x.png does not exist')
  assert.is(errorText(new TypeError('cannot read properties of undefined')), 'mod: internal: cannot read properties of undefined')
  assert.is(errorText('a thrown string'), 'mod: internal: a thrown string')
})

test('a failure outside any command (bin/run.js) is one line: oclif\'s own errors as usage, others as internal', () => {
  const parse = Object.assign(new Error('Parsing --fps \n\tExpected a number\nSee more help with --help'), {oclif: {exit: 2}})
  assert.is(startupErrorLine(parse), 'mod: usage: --fps: Expected a number')
  assert.is(startupErrorLine(new Error('first line\nsecond line')), 'mod: internal: first line: second line')
  assert.is(startupErrorLine(new ModError('invalid_config', 'bad')), 'mod: invalid_config: bad')
})

test('flags that exclude each other are named once per pair, in plain words', () => {
  const both = '--json=true cannot also be provided when using --ndjson\n--ndjson=true cannot also be provided when using --json\n--ndjson=true cannot also be provided when using --summary'
  assert.is(oneLine(both), '--json and --ndjson cannot be used together: --ndjson and --summary cannot be used together')
})

test("oclif's heading over its problems is left out, for one problem as for several", () => {
  assert.is(oneLine('The following error occurred:\n  Missing required flag out\nSee more help with --help'), 'Missing required flag out')
  assert.is(oneLine('The following errors occurred:\n  Missing required flag out\n  Missing required flag in'), 'Missing required flag out: Missing required flag in')
})

test('the did-you-mean distance counts single-letter edits', () => {
  assert.equal([distance('scna', 'scan'), distance('scan', 'scan'), distance('models:pul', 'models:pull'), distance('', 'abc')], [2, 0, 1, 3])
})

test('closest picks the nearest known word, and nothing when the nearest is too far to be a typo', () => {
  assert.is(closest('nudty', ['nudity', 'suggestive', 'drugs']), 'nudity')
  assert.is(closest('Violance', ['violence', 'gore']), 'violence')
  assert.is(closest('xyzzy', ['nudity', 'gore']), undefined)
  assert.is(closest('gore', ['gore']), undefined)
})

test('didYouMean ends a message with the closest word, or adds nothing', () => {
  assert.is(didYouMean('nudty', ['nudity', 'gore']), '; did you mean "nudity"?')
  assert.is(didYouMean('xyzzy', ['nudity', 'gore']), '')
})

/** A stand-in for a stream: what was written, and whether it is a terminal. */
function stream(isTTY: boolean): NodeJS.WriteStream & {text: string} {
  const s = Object.assign(new EventEmitter(), {text: '', isTTY, columns: 20, write: (t: string) => ((s.text += t), true)})
  return s as unknown as NodeJS.WriteStream & {text: string}
}

test('progress writes nothing at all when stderr is not a terminal', () => {
  const err = stream(false)
  const p = startProgress('Scanning', err, 'elsewhere')
  p.update('Scanning: 1')
  p.above(() => undefined)
  p.finish()
  assert.is(err.text, '')
})

test('progress on a terminal: results shared with it are written with the line cleared, then it is redrawn; finish clears it', () => {
  const err = stream(true)
  const written: string[] = []
  const p = startProgress('Scanning a long folder name that does not fit', err, 'terminal')
  assert.is(err.text, '\r\x1b[2KScanning a long fo…\r')
  err.text = ''
  p.above(() => written.push(err.text))
  assert.equal(written, ['\r\x1b[2K'])
  assert.is(err.text, '\r\x1b[2K\r\x1b[2KScanning a long fo…\r')
  err.text = ''
  p.finish()
  assert.is(err.text, '\r\x1b[2K')
  p.update('later')
  assert.is(err.text, '\r\x1b[2K')
})

test('stdout a pipe (its reader writes to the terminal when it likes): no progress line; a file or /dev/null keeps it', () => {
  const dir = tempDir()
  try {
    writeFileSync(join(dir.path, 'out.txt'), '')
    execFileSync('mkfifo', [join(dir.path, 'fifo')])
    const fds = [openSync(join(dir.path, 'out.txt'), 'w'), openSync('/dev/null', 'w'), openSync(join(dir.path, 'fifo'), constants.O_RDWR)]
    try {
      assert.equal(fds.map((fd) => resultsTarget({fd})), ['elsewhere', 'elsewhere', 'pipe'])
    } finally {
      for (const fd of fds) closeSync(fd)
    }
  } finally {
    dir.remove()
  }
  assert.is(resultsTarget({isTTY: true, fd: 1}), 'terminal')
  const err = stream(true)
  const p = startProgress('Scanning', err, 'pipe')
  p.update('Scanning 1 of 2')
  p.above(() => undefined, 'row\n')
  p.finish()
  assert.is(err.text, '')
})

test('progress: a terminal made narrower gets the line again at once, the rows the old one was rewrapped onto cleared', () => {
  const err = stream(true)
  err.columns = 40
  const p = startProgress('Scanning 12 of 40: 12 scanned: 12 safe', err, 'terminal')
  // The cursor is left at the start of the line, where a terminal that rewraps the line keeps it.
  assert.is(err.text, '\r\x1b[2KScanning 12 of 40: 12 scanned: 12 safe\r')
  err.text = ''
  err.columns = 15
  err.emit('resize')
  // 38 columns on rows of 15: two rows below the start, cleared with the cursor saved and put back.
  assert.is(err.text, '\x1b7\x1b[B\x1b[2K\x1b[B\x1b[2K\x1b8\r\x1b[2K\r\x1b[2KScanning 12 o…\r')
  err.text = ''
  err.columns = 60
  err.emit('resize')
  assert.is(err.text, '\r\x1b[2K\r\x1b[2KScanning 12 of 40: 12 scanned: 12 safe\r')
  p.finish()
  err.text = ''
  err.emit('resize')
  assert.is(err.text, '')
  assert.is(err.listenerCount('resize'), 0)
  assert.equal([clearWrapped(20, 20), clearWrapped(21, 20), clearWrapped(5, 0)], ['\r\x1b[2K', '\x1b7\x1b[B\x1b[2K\x1b8\r\x1b[2K', '\x1b7\x1b[B\x1b[2K\x1b[B\x1b[2K\x1b[B\x1b[2K\x1b[B\x1b[2K\x1b8\r\x1b[2K'])
})

test('the progress line is cut to the terminal in columns: a wide character takes two, an emoji is never split', () => {
  assert.is(fitted('Scanning 长长的视频文件名称.mp4: frame 8', 20), 'Scanning 长长的视频…')
  assert.is(fitted('ab😀😀😀cd', 6), 'ab😀…')
  assert.is(fitted('👨‍👩‍👧 family', 5), '👨‍👩‍👧 f…')
  assert.is(fitted('short', 20), 'short')
})

test('progress names nothing raw, and a dumb terminal (TERM=dumb), which cannot clear a line, gets none', () => {
  const err = stream(true)
  startProgress('\x1b]0;T\x07\rZ', err, 'elsewhere').finish()
  assert.is(err.text, '\r\x1b[2K\\x1b]0;T\\x07\\x0dZ\r\r\x1b[2K')
  const dumb = stream(true)
  const d = startProgress('Scanning', dumb, 'elsewhere', true)
  d.update('Scanning 1 of 2')
  d.finish()
  assert.is(dumb.text, '')
})

test('progress: an update sooner than REDRAW_MS after a draw is drawn when the time is up, not dropped; finish cancels it', async () => {
  const err = stream(true)
  const p = startProgress('Scanning', err, 'elsewhere')
  p.update('Scanning 1 of 2')
  p.update('Scanning 2 of 2')
  assert.is(err.text, '\r\x1b[2KScanning\r')
  await new Promise((resolve) => setTimeout(resolve, REDRAW_MS * 2))
  assert.is(err.text, '\r\x1b[2KScanning\r\r\x1b[2KScanning 2 of 2\r')
  const ended = stream(true)
  const q = startProgress('Scanning', ended, 'elsewhere')
  q.update('Scanning 1 of 1')
  q.finish()
  await new Promise((resolve) => setTimeout(resolve, REDRAW_MS * 2))
  assert.is(ended.text, '\r\x1b[2KScanning\r\r\x1b[2K')
})

test.run()

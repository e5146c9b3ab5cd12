// The steps' list (runSteps, listr2) on a terminal whose size changes while it is drawn.
import {PassThrough} from 'node:stream'

import stringWidth from 'string-width'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {runSteps} from '../../src/cli/steps.js'

/** A terminal 40 columns wide, as stderr: what is written to it, and its size to change. */
function terminal(): {stream: NodeJS.WriteStream; written: () => string} {
  const stream = Object.assign(new PassThrough(), {isTTY: true, columns: 40, rows: 24}) as unknown as NodeJS.WriteStream
  let text = ''
  stream.on('data', (d: Buffer) => (text += d.toString()))
  return {stream, written: () => text}
}

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms))

test('made narrower while the list is drawn: each redraw is wrapped at the new width, so log-update erases all of it', async () => {
  const {stream, written} = terminal()
  let after = 0
  let until = 0
  await runSteps(
    [
      {
        title: 'A step whose title is wider than sixteen columns',
        run: async () => {
          // A few redraws at 40 columns (the spinner turns every 100 ms), then at 16.
          await wait(250)
          stream.columns = 16
          stream.emit('resize')
          after = written().length
          await wait(350)
          until = written().length
        },
      },
    ],
    stream,
    {},
    false,
  )
  // What was redrawn at 16 columns (the list printed once more at the end is not erased), the escapes (erasing, the
  // cursor) taken out: rows of at most 16 columns. Wrapped at the 40 of the copy of the stream that listr2 made at
  // the start, each redraw erased fewer rows than the terminal gave it, and left rows behind.
  const rows = written()
    .slice(after, until)
    .replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '')
    .split('\n')
  assert.ok(rows.join('').includes('sixteen columns'), JSON.stringify(rows))
  for (const row of rows) assert.ok(stringWidth(row) <= 16, JSON.stringify(row))
})

test.run()

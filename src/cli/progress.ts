/**
 * The progress line of the commands that print results as they go (scan, scan-video, hash). On a terminal: one
 * status line on stderr, redrawn in place. Results go to stdout above it:
 * `above()` clears the line, lets the caller write, then redraws, so a row printed to the same terminal is never
 * erased. Results that end mid-line (the JSON array's `[`, an element before its comma, SARIF) leave the cursor
 * on their row, which drawing the line there would clear: the line waits until results end a line again.
 * (listr2 was dropped here: it picks its renderer by process.stdout.isTTY, so with stdout redirected its fallback
 * renderer printed to stdout, and its default renderer redraws over rows written to the same terminal. Commands
 * made of a few steps, whose results come at the end, use listr2 through steps.ts.)
 */
import {fstatSync} from 'node:fs'

import stringWidth from 'string-width'

import {whileSuspended} from './cursor.js'
import {visible} from './visible.js'

export interface Progress {
  update(text: string): void
  /** Runs `write`, which prints `text` (results), with the status line out of the way. */
  above(write: () => void, text?: string): void
  /** Removes the line for good; idempotent. */
  finish(): void
}

/**
 * The shortest time between two redraws: a scan can finish hundreds of images per second. An update that comes
 * sooner is drawn when the time is up, so a scan that then waits (for stdin, a slow disk) shows its last count.
 */
export const REDRAW_MS = 80
/**
 * The line is drawn with the cursor left at its start (`\r` after it), so that one row is cleared from there.
 * (`ESC [ J`, to the end of the screen, would push the screen into tmux's history from its top row.)
 */
const CLEAR = '\r\x1b[2K'

/**
 * What clears a line drawn `width` columns wide once the terminal is `columns` wide. A terminal made narrower
 * rewraps the line onto rows below its start (VTE, iTerm2, tmux) and the cursor keeps its place at the start: each
 * of those rows is cleared, the cursor saved and put back around it. A terminal that cuts the line instead (xterm)
 * has no such rows, and the cursor does not move past the screen's last row: nothing else is cleared. Clearing
 * upwards from the end of the line, where the cursor would be otherwise, would erase results on the latter. (A
 * line in the screen's top rows that tmux rewraps is partly pushed into its history, where nothing reaches it.)
 */
export function clearWrapped(width: number, columns: number): string {
  const below = Math.ceil(width / Math.max(columns, 1)) - 1
  return below > 0 ? `\x1b7${'\x1b[B\x1b[2K'.repeat(below)}\x1b8${CLEAR}` : CLEAR
}

const silent: Progress = {
  update() {},
  above: (write) => write(),
  finish() {},
}

const graphemes = new Intl.Segmenter(undefined, {granularity: 'grapheme'})

/**
 * `text` cut to `columns` of the terminal, ending in `…` when cut. Counted in columns, not characters: a wide
 * character (Chinese, Japanese, an emoji) takes two, and a line longer than the terminal would wrap onto a second
 * row as it is written, after which `\r` returns to the start of that row only: each redraw would leave a row behind.
 */
export function fitted(text: string, columns: number): string {
  if (stringWidth(text) <= columns) return text
  let out = ''
  let used = 0
  for (const {segment} of graphemes.segment(text)) {
    const w = stringWidth(segment)
    if (used + w > columns - 1) break
    out += segment
    used += w
  }
  return `${out}…`
}

/**
 * Where results go, as the progress line sees it. `terminal`: the same terminal, so the line steps aside for each
 * result. `pipe` (or a socket): its reader (`| less`, `| grep`, `| cat`) most often writes to the terminal too,
 * whenever it likes, after the line was drawn again: nothing can keep the line off its rows. `elsewhere` (a file,
 * /dev/null): the line has the terminal to itself.
 */
export type ResultsTarget = 'terminal' | 'pipe' | 'elsewhere'

export function resultsTarget(stream: {isTTY?: boolean; fd?: number}): ResultsTarget {
  if (stream.isTTY) return 'terminal'
  if (stream.fd === undefined) return 'elsewhere'
  try {
    const info = fstatSync(stream.fd)
    return info.isFIFO() || info.isSocket() ? 'pipe' : 'elsewhere'
  } catch {
    return 'elsewhere'
  }
}

export function startProgress(
  text: string,
  stream: NodeJS.WriteStream = process.stderr,
  results: ResultsTarget = resultsTarget(process.stdout),
  /** The terminal cannot clear a line (TERM=dumb: Emacs' shell, some CI consoles): each redraw would add one. */
  dumb = false,
): Progress {
  if (!stream.isTTY || dumb || results === 'pipe') return silent
  const shared = results === 'terminal'
  let current = text
  let shown = false
  /** The columns the line shown takes. */
  let drawn = 0
  let done = false
  let last = 0
  let pending: NodeJS.Timeout | undefined
  // The results on the same terminal stopped mid-line: the cursor is on their row.
  let midLine = false
  const draw = (): void => {
    if (midLine) return
    // One column spare, however narrow the terminal: a line that fills the row, or more, wraps. Too narrow for a
    // character and its `…`: nothing.
    const width = (stream.columns || 80) - 1
    // The line may name a file: nothing in the name may move the cursor or change the terminal.
    const line = width < 2 ? '' : fitted(visible(current), width)
    stream.write(line === '' ? CLEAR : `${CLEAR}${line}\r`)
    drawn = stringWidth(line)
    shown = width >= 2
    last = Date.now()
  }
  const clear = (): void => {
    if (shown) stream.write(CLEAR)
    shown = false
  }
  // Drawn again at once for the new width, the rows the old line may now take cleared first.
  const resized = (): void => {
    if (!shown) return
    stream.write(clearWrapped(drawn, stream.columns || 80))
    shown = false
    draw()
  }
  stream.on('resize', resized)
  // Ctrl-Z: the line would stay on the screen, its count frozen, above the shell's "Stopped" and what comes after
  // it; it is cleared, and drawn again when the process goes on (fg).
  const undoSuspend = whileSuspended({
    stop: clear,
    resume() {
      if (!done) draw()
    },
  })
  draw()
  return {
    update(t) {
      current = t
      if (done) return
      const wait = REDRAW_MS - (Date.now() - last)
      if (wait <= 0) draw()
      else
        pending ??= setTimeout(() => {
          pending = undefined
          if (!done) draw()
        }, wait).unref()
    },
    above(write, text = '') {
      if (!shared) return write()
      clear()
      write()
      if (text !== '') midLine = !text.endsWith('\n')
      if (!done) draw()
    },
    finish() {
      done = true
      clearTimeout(pending)
      stream.off('resize', resized)
      undoSuspend()
      clear()
    },
  }
}

import {writeSync} from 'node:fs'

/**
 * The cursor of the terminal on stderr (the one mod draws on), shown or hidden by writing to file descriptor 2
 * itself: while listr2 draws its steps it has replaced process.stderr.write with a buffer of its own, which a
 * process ending of a signal never flushes.
 */
function toTerminal(escape: string): void {
  try {
    writeSync(2, escape)
  } catch {
    // A terminal that closed (EIO) has no cursor left to show.
  }
}

export const showCursor = (): void => toTerminal('\x1b[?25h')
export const hideCursor = (): void => toTerminal('\x1b[?25l')

/**
 * While something drawn on stderr keeps the cursor hidden: Ctrl-Z (SIGTSTP) shows it for the shell's prompt
 * and stops the process as it would have been stopped, and going on (fg, bg) hides it again. Returns the undoing.
 */
export function cursorShownWhileSuspended(): () => void {
  const onStop = (): void => {
    showCursor()
    // Without a listener the signal's own action applies: the process stops here until SIGCONT.
    process.off('SIGTSTP', onStop)
    process.kill(process.pid, 'SIGTSTP')
    process.on('SIGTSTP', onStop)
    hideCursor()
  }
  process.on('SIGTSTP', onStop)
  return () => void process.off('SIGTSTP', onStop)
}

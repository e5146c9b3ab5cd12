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

/** What the terminal must be given back while the process is stopped (Ctrl-Z), and taken again once it goes on. */
export interface SuspendHook {
  stop(): void
  resume(): void
}

const hooks = new Set<SuspendHook>()

/**
 * One SIGTSTP listener for every hook: a second listener would keep Node.js catching the signal after the first
 * stopped the process, so it would never stop.
 */
function onStop(): void {
  for (const h of hooks) h.stop()
  // Without a listener the signal's own action applies: the process stops here until SIGCONT.
  process.off('SIGTSTP', onStop)
  process.kill(process.pid, 'SIGTSTP')
  process.on('SIGTSTP', onStop)
  for (const h of hooks) h.resume()
}

/** Runs `hook.stop` on Ctrl-Z (SIGTSTP) before the process stops as it would have, `hook.resume` on going on (fg, bg). Returns the undoing. */
export function whileSuspended(hook: SuspendHook): () => void {
  if (hooks.size === 0) process.on('SIGTSTP', onStop)
  hooks.add(hook)
  return () => {
    if (hooks.delete(hook) && hooks.size === 0) process.off('SIGTSTP', onStop)
  }
}

/**
 * While something drawn on stderr keeps the cursor hidden: Ctrl-Z (SIGTSTP) shows it for the shell's prompt
 * and stops the process as it would have been stopped, and going on (fg, bg) hides it again. Returns the undoing.
 */
export function cursorShownWhileSuspended(): () => void {
  return whileSuspended({stop: showCursor, resume: hideCursor})
}

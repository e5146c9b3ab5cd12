// What a person sees on a terminal: a command in a tmux pane (a pseudo-terminal), its scrollback included.
//
// Each pane runs on a tmux server of its own, with its socket in the caller's folder (removed with it) and no user
// configuration read. A server exits once its last session is gone; a session started on the same socket meanwhile
// can join the exiting server and vanish with it ("no server running" on the next command).
import {execFileSync, spawnSync} from 'node:child_process'
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'

export interface Pane {
  /** Sends keys as tmux names them (`C-c`, `Enter`). */
  keys(...keys: string[]): void
  /** Makes the pane's terminal `width` columns wide, as dragging a window's edge does (tmux rewraps its lines). */
  resize(width: number): void
  /**
   * The pane's text, scrollback first, once it matches `pattern`; an error showing the text if it has not in
   * `timeoutMs`. `joined`: a line the terminal wrapped onto several rows comes back as one, trailing spaces kept.
   */
  until(pattern: RegExp, timeoutMs?: number, joined?: boolean): Promise<string>
}

let panes = 0

/**
 * Runs `command` (a shell line) in a `width`x`height` pane whose working folder is `dir`, hands the pane to `use`,
 * and stops the pane's server, the command with it, however `use` ends.
 */
export async function inPane<T>(dir: string, command: string, size: {width: number; height: number}, use: (pane: Pane) => Promise<T>): Promise<T> {
  const socket = join(dir, `tmux-${++panes}.sock`)
  const config = join(dir, 'tmux.conf')
  // The command runs in bash whatever the user's login shell (tmux's default): dash, Debian's /bin/sh and useradd's
  // default, exits on the Ctrl-C its child handles, where bash goes on to the rest of the line (`echo EXIT=$?`).
  writeFileSync(config, 'set -g history-limit 20000\nset -g default-shell /bin/bash\n')
  const tmux = (...args: string[]): string => execFileSync('tmux', ['-S', socket, '-f', config, ...args], {encoding: 'utf8'})
  tmux('new-session', '-d', '-s', 'pane', '-x', String(size.width), '-y', String(size.height), '-c', dir, command)
  const pane: Pane = {
    keys: (...keys) => void tmux('send-keys', '-t', 'pane', ...keys),
    resize: (width) => void tmux('resize-window', '-t', 'pane', '-x', String(width)),
    async until(pattern, timeoutMs = 60_000, joined = false) {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        const screen = tmux('capture-pane', '-t', 'pane', '-p', ...(joined ? ['-J'] : []), '-S', '-', '-E', '-')
        if (pattern.test(screen)) return screen
        if (Date.now() > deadline) throw new Error(`the pane did not show ${pattern} in ${timeoutMs} ms; it shows:\n${screen.trimEnd()}`)
        await new Promise((r) => setTimeout(r, 200))
      }
    },
  }
  try {
    return await use(pane)
  } finally {
    spawnSync('tmux', ['-S', socket, 'kill-server'])
  }
}

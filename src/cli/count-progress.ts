import {startProgress} from './progress.js'

/** Progress of a run over N items on stderr: the redrawn status line on a terminal, else a plain line every few seconds. */
export interface CountProgress {
  update(done: number, total: number): void
  finish(): Promise<void>
}

const PLAIN_EVERY_MS = 5000

export function startCountProgress(title: string, stream: NodeJS.WriteStream = process.stderr): CountProgress {
  if (stream.isTTY) {
    const progress = startProgress(title, stream)
    return {update: (done, total) => progress.update(`${title}: ${done}/${total} images`), finish: async () => progress.finish()}
  }
  let last = 0
  let reported = 0
  let latest = {done: 0, total: 0}
  const line = () => {
    reported = latest.done
    stream.write(`${title}: ${latest.done}/${latest.total} images\n`)
  }
  return {
    update(done, total) {
      latest = {done, total}
      const now = Date.now()
      if (now - last >= PLAIN_EVERY_MS) {
        last = now
        line()
      }
    },
    finish: async () => {
      if (reported !== latest.done) line()
    },
  }
}

import {Listr, ListrLogger, ProcessOutput} from 'listr2'

/**
 * Progress of a run over N images on stderr (eval, calibrate, head train, which print their results only at the
 * end): listr2's task display on a terminal, else a plain line every few seconds. listr2 draws on stderr whatever
 * stdout is (its renderers are given a stderr logger: left alone, the one it falls back to when stdout is not a
 * terminal prints on stdout), and leaves Ctrl-C to the command.
 */
export interface CountProgress {
  update(done: number, total: number): void
  finish(): Promise<void>
}

const PLAIN_EVERY_MS = 5000

export function startCountProgress(title: string, stream: NodeJS.WriteStream = process.stderr): CountProgress {
  if (stream.isTTY) return taskDisplay(title, stream)
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

function taskDisplay(title: string, stream: NodeJS.WriteStream): CountProgress {
  let setTitle: (t: string) => void = () => {}
  let release!: () => void
  const released = new Promise<void>((resolve) => (release = resolve))
  const logger = new ListrLogger({useIcons: true, processOutput: new ProcessOutput(stream, stream)})
  const listr = new Listr(
    [
      {
        title,
        task: async (_ctx, task) => {
          setTitle = (t) => (task.title = t)
          await released
        },
      },
    ],
    {
      // listr2 picks its renderer by whether stdout is a terminal; both draw on stderr here.
      renderer: 'default',
      rendererOptions: {logger},
      fallbackRenderer: 'simple',
      fallbackRendererOptions: {logger},
      fallbackRendererCondition: false,
      silentRendererCondition: false,
      registerSignalListeners: false,
      exitOnError: false,
    },
  )
  const running = listr.run().catch(() => undefined)
  return {
    update: (done, total) => setTitle(`${title}: ${done}/${total} images`),
    finish: async () => {
      release()
      await running
    },
  }
}

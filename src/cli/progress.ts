import {Listr, ListrLogger, ProcessOutput} from 'listr2'

export interface Progress {
  update(title: string): void
  finish(): Promise<void>
}

const silent: Progress = {update() {}, finish: async () => {}}

/** A one-line listr2 progress display on stderr, only when stderr is a terminal; stdout stays clean for results. */
export function startProgress(title: string, stream: NodeJS.WriteStream = process.stderr): Progress {
  if (!stream.isTTY) return silent
  let setTitle: (t: string) => void = () => {}
  let release!: () => void
  const released = new Promise<void>((r) => (release = r))
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
    {renderer: 'default', rendererOptions: {logger}, exitOnError: false},
  )
  const running = listr.run().catch(() => undefined)
  return {
    update: (t) => setTitle(t),
    finish: async () => {
      release()
      await running
    },
  }
}

import {chalkStderr} from 'chalk'
import {DefaultRenderer, Listr, ListrLogger, ProcessOutput} from 'listr2'

import {isModError} from '../lib/errors.js'
import {cursorShownWhileSuspended} from './cursor.js'
import {visible} from './visible.js'

/** Without a terminal, how often a step's changing title is also printed as a line. */
const PLAIN_EVERY_MS = 5000

/** One step of a command that runs several (a file of a pull, a stage of eval): its title, and the work, which may retitle the step as it goes. */
export interface Step {
  title: string
  run: (setTitle: (title: string) => void) => Promise<void>
}

const SGR = /\x1b\[[0-9;]*m/g

/**
 * listr2's output on `terminal`, its colours taken out unless `colour` (listr2 colours by stdout, colorette's
 * choice, and it writes to stderr). listr2 hands its renderer a copy of the stream made when the list starts, which
 * kept the terminal's width of that moment: a terminal made narrower then wrapped each redrawn list onto more rows
 * than log-update counted and erased, leaving a copy of the list's top behind at every redraw (10 a second). The
 * copies here read the terminal's size as it is now.
 */
class TerminalOutput extends ProcessOutput {
  constructor(
    private readonly terminal: NodeJS.WriteStream,
    private readonly colour: boolean,
  ) {
    super(terminal, terminal)
  }

  override get stdout(): NodeJS.WriteStream {
    return this.adapt(super.stdout)
  }

  override get stderr(): NodeJS.WriteStream {
    return this.adapt(super.stderr)
  }

  override toStdout(buffer: string, eol?: boolean): boolean {
    return super.toStdout(this.colour ? buffer : buffer.replace(SGR, ''), eol)
  }

  override toStderr(buffer: string, eol?: boolean): boolean {
    return super.toStderr(this.colour ? buffer : buffer.replace(SGR, ''), eol)
  }

  /** `out` (listr2's copy of the stream) sized as the terminal is now, and writing without colours unless `colour`. */
  private adapt(out: NodeJS.WriteStream): NodeJS.WriteStream {
    const terminal = this.terminal
    Object.defineProperties(out, {
      // A terminal of no size (0 x 0: a pseudo-terminal nobody sized, as `script` or `docker run -t` without a
      // terminal of their own make) is drawn as 80 x 24: at 0 columns listr2 wrapped every character onto a row.
      columns: {get: () => terminal.columns || 80, configurable: true},
      rows: {get: () => terminal.rows || 24, configurable: true},
    })
    if (this.colour) return out
    const write = out.write.bind(out) as (chunk: unknown, ...rest: unknown[]) => boolean
    return Object.assign(out, {write: (chunk: unknown, ...rest: unknown[]) => write(typeof chunk === 'string' ? chunk.replace(SGR, '') : chunk, ...rest)})
  }
}

/** The task list redrawn in place, on stderr: listr2 would judge whether it can redraw by stdout, not the stream it is given. */
class TerminalRenderer extends DefaultRenderer {
  static override nonTTY = true
}

/**
 * Runs steps one after the other and shows them with listr2 on stderr: its task list, redrawn in place, on a
 * terminal; its plain `simple` renderer (a line as each step starts and ends) when stderr is not a terminal that
 * can redraw (`TERM=dumb`) or CI is set. Coloured only when stderr is (chalk's choice for stderr, which NO_COLOR,
 * FORCE_COLOR and --[no-]color steer). stdout stays clean for JSON: both renderers get a stderr logger (left alone,
 * listr2 picks its renderer and colours by stdout, and its fallback prints there). Signals stay with the command.
 * The first failing step's error is thrown, as the command reports it.
 */
export async function runSteps(
  steps: readonly Step[],
  stream: NodeJS.WriteStream = process.stderr,
  env: NodeJS.ProcessEnv = process.env,
  colour = chalkStderr.level > 0,
): Promise<void> {
  const plain = !stream.isTTY || Boolean(env.CI) || env.TERM === 'dumb'
  // listr2 wraps the list at stdout's width (80 when stdout is no terminal): stdout on a terminal of no size had
  // every character of the list on a row of its own. Its next resize sets the real width.
  if (!plain && process.stdout.isTTY && !process.stdout.columns) process.stdout.columns = 80
  let failure: {error: unknown} | undefined
  const logger = new ListrLogger({useIcons: !plain, processOutput: new TerminalOutput(stream, colour)})
  const listr = new Listr(
    steps.map((s) => ({
      // A title may name a file or a folder: it stays one line, whatever the name holds.
      title: visible(s.title),
      task: async (_ctx: unknown, task: {title: string | undefined; output: string | undefined}) => {
        // The plain renderer prints a title only as the step starts and ends: a long step's count also goes out as
        // a line now and then, for logs.
        let lastLine = Date.now()
        const retitle = (title: string): void => {
          task.title = visible(title)
          if (plain && Date.now() - lastLine >= PLAIN_EVERY_MS) {
            lastLine = Date.now()
            task.output = task.title
          }
        }
        try {
          await s.run(retitle)
        } catch (error) {
          // The command prints the reason once, as its error line; the step shows that it failed, and its code
          // (the plain renderer's `[FAILED: download_failed]`).
          failure ??= {error}
          throw new Error(isModError(error) ? error.code : 'failed')
        }
      },
    })),
    {
      renderer: plain ? 'simple' : TerminalRenderer,
      // A failed step keeps its title (the reason is the command's own error line), not listr2's `failed` in its place.
      rendererOptions: {logger, showErrorMessage: false},
      fallbackRenderer: 'simple',
      fallbackRendererOptions: {logger},
      fallbackRendererCondition: false,
      silentRendererCondition: false,
      registerSignalListeners: false,
      exitOnError: true,
    },
  )
  // listr2 hides the cursor while it redraws the list.
  const undo = plain || stream !== process.stderr ? undefined : cursorShownWhileSuspended()
  try {
    await listr.run()
  } catch (e) {
    throw failure ? failure.error : e
  } finally {
    undo?.()
  }
}

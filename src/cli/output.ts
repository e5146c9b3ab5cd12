import {Flags} from '@oclif/core'

import type {Reporter} from './reports/reporter.js'

/**
 * `--format` with the formats a command takes, and `--json`/`--ndjson` as its aliases. `description` says what
 * each format prints for this command; `exclusive` names the command's flags that `--format` and `--ndjson` exclude.
 */
export function formatFlags<const F extends readonly string[]>(formats: F, description: string, exclusive: string[] = []) {
  return {
    // `exclusive` is not given to --format: --format json is --json, so a command checks its other values itself.
    format: Flags.option({
      options: formats,
      description,
      helpValue: 'FORMAT',
      exclusive: ['json', 'ndjson'],
    })(),
    json: Flags.boolean({description: 'Alias of --format json.', exclusive: ['ndjson', 'format']}),
    ndjson: Flags.boolean({description: 'Alias of --format ndjson.', exclusive: ['json', 'format', ...exclusive]}),
  }
}

/** The format asked for: --format, else its --json or --ndjson alias, else the table. */
export function chosenFormat<F extends string>(flags: {format?: F; json?: boolean; ndjson?: boolean}): F | 'table' | 'json' | 'ndjson' {
  return flags.format ?? (flags.json ? 'json' : flags.ndjson ? 'ndjson' : 'table')
}

/** A command's results on their way to stdout, in one format. */
export interface Output<Item, End> {
  /** True once stdout's reader has gone (`| head -1`): the command stops working for nobody. */
  readonly closed: boolean
  item(item: Item): void
  /** Writes the reporter's end, once; later calls do nothing. */
  end(end: End): void
}

/**
 * The one writer of a command's results: what `reporter` returns goes to `stream` (the reporter's start at once),
 * each write through `around` (the progress line steps aside). A reader that leaves (EPIPE), or a stream that
 * fails, closes the output instead of failing the command with a stack trace: the command stops working for nobody,
 * and bin/run.js turns a failure other than EPIPE into exit 2. stderr's notes are no business of the output and
 * never silenced by a format.
 */
export function openOutput<Item, End>(
  reporter: Reporter<Item, End>,
  stream: NodeJS.WritableStream = process.stdout,
  around: (write: () => void, text: string) => void = (write) => write(),
): Output<Item, End> {
  let closed = false
  let ended = false
  // Any failure ends the output; one other than EPIPE is the process's to report (src/cli/streams.ts).
  stream.on('error', () => {
    closed = true
  })
  const write = (text: string): void => {
    if (text !== '' && !closed) around(() => stream.write(text), text)
  }
  write(reporter.start())
  return {
    get closed() {
      return closed
    },
    item: (item) => write(reporter.item(item)),
    end(end) {
      if (ended) return
      ended = true
      write(reporter.end(end))
    },
  }
}

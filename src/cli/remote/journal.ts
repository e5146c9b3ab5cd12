import {appendFile, readFile} from 'node:fs/promises'

import type {ItemResult} from '../../lib/engine.js'
import {ModError} from '../../lib/errors.js'

/**
 * The `--resume` journal of a remote run: NDJSON, a first line naming the server's policy, then one line per
 * finished input with the sha256 of the bytes it was scored on. A rerun with the same journal sends only what
 * is not in it (or changed since), and replays the rest, so its output, summary and exit code cover every input.
 */
export interface Journal {
  /** The journaled result of `source`, when its bytes are still those scored. */
  done(source: string, sha256: string): ItemResult | undefined
  /** Appends finished inputs: one write per batch, so an interrupted run loses at most the batches in flight. */
  add(entries: readonly {sha256: string; result: ItemResult}[]): Promise<void>
  /** Inputs the journal held when the run started. */
  readonly size: number
}

interface Header {
  mod_resume: 1
  policy_sha256: string
}

/** Opens (or starts) the journal at `path` for a server whose policy has `policySha256`. */
export async function openJournal(path: string, policySha256: string): Promise<Journal> {
  const text = await readFile(path, 'utf8').catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT') return ''
    throw new ModError('invalid_config', `--resume ${path}: ${e.message}`)
  })
  const finished = new Map<string, {sha256: string; result: ItemResult}>()
  // A run killed mid-write leaves a partial last line: what it held is scored again.
  const lines = text.split('\n').filter((l) => l.trim() !== '')
  if (lines.length === 0) await appendFile(path, `${JSON.stringify({mod_resume: 1, policy_sha256: policySha256} satisfies Header)}\n`)
  else {
    // Ends the partial line, so that the next entry starts on a line of its own.
    if (!text.endsWith('\n')) await appendFile(path, '\n')
    let header: Partial<Header> | undefined
    try {
      header = JSON.parse(lines[0]) as Partial<Header>
    } catch {}
    if (header?.mod_resume !== 1) throw new ModError('invalid_config', `--resume ${path} is not a journal of mod scan --server: name a new file, or remove this one`)
    if (header.policy_sha256 !== policySha256) {
      throw new ModError(
        'invalid_config',
        `--resume ${path} was written under another policy (sha256 ${header.policy_sha256?.slice(0, 12)}; the server's is ${policySha256.slice(0, 12)}): its verdicts would not be this policy's; remove it to start over`,
      )
    }
    for (const line of lines.slice(1)) {
      try {
        const entry = JSON.parse(line) as {sha256: string; result: ItemResult}
        finished.set(entry.result.source, entry)
      } catch {}
    }
  }
  return {
    size: finished.size,
    done(source, sha256) {
      const entry = finished.get(source)
      return entry?.sha256 === sha256 ? entry.result : undefined
    },
    async add(entries) {
      if (entries.length > 0) await appendFile(path, entries.map((e) => `${JSON.stringify(e)}\n`).join(''))
    },
  }
}

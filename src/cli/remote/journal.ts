import {createHmac, timingSafeEqual} from 'node:crypto'
import {appendFile} from 'node:fs/promises'

import type {ItemResult} from '../../lib/engine.js'
import {ModError} from '../../lib/errors.js'
import {readFileCapped} from '../../lib/input/read-capped.js'

/**
 * The `--resume` journal of a remote run: NDJSON, a first line naming the server's policy, then one line per
 * finished input with the sha256 of the bytes it was scored on. A rerun with the same journal sends only what
 * is not in it (or changed since), and replays the rest, so its output, summary and exit code cover every input.
 *
 * A replayed verdict is trusted like the server's own, so every line is signed: an HMAC-SHA256, under a key the
 * workspace cannot read (MOD_JOURNAL_KEY, else the API key), over the policy's sha256, the bytes' sha256 and the
 * whole result. A line anyone else wrote or edited (a pull request adding `"is_safe": true` for a flagged image)
 * fails its check, and the journal is refused rather than trusted in part.
 */
export interface Journal {
  /** The journaled result of `source`, when its bytes are still those scored. */
  done(source: string, sha256: string): ItemResult | undefined
  /** Appends finished inputs: one write per batch, so an interrupted run loses at most the batches in flight. */
  add(entries: readonly {sha256: string; result: ItemResult}[]): Promise<void>
  /** Inputs the journal held when the run started. */
  readonly size: number
}

/** A journal of a million inputs is a few hundred MiB; anything larger is not one. */
const MAX_JOURNAL_BYTES = 512 * 1024 * 1024

/** The format of the lines: 1 had no signatures and is refused. */
const VERSION = 2

interface Header {
  mod_resume: number
  policy_sha256: string
  /** Tells a journal signed under another key from an edited one, without revealing the key. */
  key_check: string
}

interface Entry {
  sha256: string
  result: ItemResult
  hmac: string
}

/** The signing key: derived from the secret, so that the API key itself is never what signs. */
function journalKey(secret: string): Buffer {
  return createHmac('sha256', 'mod scan --resume journal').update(secret).digest()
}

function mac(key: Buffer, ...parts: string[]): string {
  // Parts joined by NUL, which none of them holds as text (JSON escapes it), so no two part lists sign alike.
  return createHmac('sha256', key).update(parts.join('\0')).digest('hex')
}

function sameHex(a: unknown, b: string): boolean {
  return typeof a === 'string' && a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b))
}

const entryMac = (key: Buffer, policySha256: string, sha256: string, result: ItemResult): string =>
  mac(key, 'entry', String(VERSION), policySha256, sha256, JSON.stringify(result))

/**
 * Opens (or starts) the journal at `path` for a server whose policy has `policySha256`, signing and checking its
 * lines with `secret`.
 */
export async function openJournal(path: string, policySha256: string, secret: string): Promise<Journal> {
  const text = await readFileCapped(path, MAX_JOURNAL_BYTES).then(
    (bytes) => bytes.toString('utf8'),
    (e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT') return ''
      throw new ModError('invalid_config', `--resume ${path}: ${e.message}`)
    },
  )
  // A journal that cannot be written (its folder missing, a full disk) is the --resume path's problem, said so.
  const append = (text: string) =>
    appendFile(path, text).catch((e: NodeJS.ErrnoException) => {
      throw new ModError('invalid_config', `--resume ${path} cannot be written: ${e.message}`)
    })
  const key = journalKey(secret)
  const keyCheck = mac(key, 'key check')
  const finished = new Map<string, {sha256: string; result: ItemResult}>()
  const refuse = (why: string) => new ModError('invalid_config', `--resume ${path} ${why}`)
  // A run killed mid-write leaves a partial last line: what it held is scored again.
  const lines = text.split('\n').filter((l) => l.trim() !== '')
  if (lines.length === 0) await append(`${JSON.stringify({mod_resume: VERSION, policy_sha256: policySha256, key_check: keyCheck} satisfies Header)}\n`)
  else {
    let header: Partial<Header> | undefined
    try {
      header = JSON.parse(lines[0]) as Partial<Header>
    } catch {}
    if (typeof header?.mod_resume !== 'number') throw refuse('is not a journal of mod scan --server: name a new file, or remove this one')
    if (header.policy_sha256 !== policySha256) {
      throw refuse(
        `was written under another policy (sha256 ${String(header.policy_sha256).slice(0, 12)}; the server's is ${policySha256.slice(0, 12)}): its verdicts would not be this policy's; remove it to start over`,
      )
    }
    if (header.mod_resume !== VERSION) throw refuse('was written by an older mod, without signatures: remove it to start over')
    if (!sameHex(header.key_check, keyCheck)) {
      throw refuse('was signed under another key (MOD_JOURNAL_KEY, or the API key when that is unset): its verdicts cannot be trusted; remove it to start over')
    }
    for (const [i, line] of lines.slice(1).entries()) {
      let entry: Partial<Entry>
      try {
        entry = JSON.parse(line) as Partial<Entry>
      } catch {
        // The line a killed run cut off: not an entry, nothing to trust.
        continue
      }
      const {sha256, result, hmac} = entry ?? {}
      if (typeof sha256 !== 'string' || typeof result !== 'object' || result === null || !sameHex(hmac, entryMac(key, policySha256, sha256, result))) {
        throw refuse(`line ${i + 2} was not written by mod under this key (edited, or added by someone else): its verdict cannot be trusted; remove the journal to start over`)
      }
      finished.set(result.source, {sha256, result})
    }
    // Ends the partial line, so that the next entry starts on a line of its own.
    if (!text.endsWith('\n')) await append('\n')
  }
  return {
    size: finished.size,
    done(source, sha256) {
      const entry = finished.get(source)
      return entry?.sha256 === sha256 ? entry.result : undefined
    },
    async add(entries) {
      const lines = entries.map(({sha256, result}) => `${JSON.stringify({sha256, result, hmac: entryMac(key, policySha256, sha256, result)} satisfies Entry)}\n`)
      if (lines.length > 0) await append(lines.join(''))
    },
  }
}

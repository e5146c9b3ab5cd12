import {createHash} from 'node:crypto'

import {ModError} from '../../lib/errors.js'
import {openJournal, type Journal} from './journal.js'
import type {ServerState} from './server-facts.js'

/** What signs the --resume journal: MOD_JOURNAL_KEY, else the API key; a --resume with neither is refused. */
export function journalSecret(resume: string | undefined, journalKey: string | undefined, apiKey: string | undefined): string | undefined {
  const secret = journalKey || apiKey
  if (resume !== undefined && !secret) {
    throw new ModError(
      'invalid_config',
      '--resume signs its journal with a secret the scanned files cannot know: set MOD_JOURNAL_KEY (or give the API key the server wants)',
    )
  }
  return secret
}

/** The journal at `path`, tied to the server's policy (a server that does not state its policy: to its category listing). */
export async function openResume(path: string, secret: string, server: ServerState, log: (line: string) => void): Promise<Journal> {
  const tie = server.facts.policySha256 ?? createHash('sha256').update(JSON.stringify(server.listed)).digest('hex')
  const journal = await openJournal(path, tie, secret)
  if (journal.size > 0) log(`mod: resume: ${journal.size} ${journal.size === 1 ? 'input' : 'inputs'} already scored in ${path}`)
  return journal
}

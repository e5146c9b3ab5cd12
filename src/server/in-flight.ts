import type {ServerResponse} from 'node:http'

/** The answers in flight, so that a graceful close can have each connection closed after its answer. */
export interface InFlight {
  track(res: ServerResponse): void
  /** From now on every answer not sent yet (and every later one) closes its connection. */
  closeAfterAnswers(): void
}

export function answersInFlight(): InFlight {
  const open = new Set<ServerResponse>()
  let closing = false
  return {
    track: (res) => {
      if (closing) res.setHeader('Connection', 'close')
      open.add(res)
      res.on('close', () => open.delete(res))
    },
    closeAfterAnswers: () => {
      closing = true
      for (const res of open) if (!res.headersSent) res.setHeader('Connection', 'close')
    },
  }
}

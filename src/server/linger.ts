import type {ServerResponse} from 'node:http'
import type {Socket} from 'node:net'

/** How long, and how many bytes of it, the rest of a refused body is read and dropped after the answer. */
export interface Linger {
  ms: number
  bytes: number
}

export const LINGER: Linger = {ms: 2000, bytes: 16 * 1024 * 1024}

/**
 * Closes the connection of an answer sent before its request body was read (a refused upload) in stages, as RFC 9112
 * (section 9.6) asks: the answer, then this side's FIN, while what the client still sends is read and dropped.
 * Closing at once, with unread bytes, makes the kernel reset the connection, and a client still writing its body
 * then fails on its write before it reads the answer that was sent to it (Node's fetch says "fetch failed").
 * The reading stops, and the connection is cut, at the client's own close or after `linger.ms` or `linger.bytes`,
 * whichever comes first: a refused upload is not read to its end.
 *
 * Call it on an answer carrying `Connection: close`, before the answer is sent.
 */
export function closeInStages(res: ServerResponse, linger: Linger = LINGER): void {
  const req = res.req
  const {socket} = req
  // Once an answer that closes the connection is out, Node calls the socket's destroySoon when it has one (FIN, then
  // the file descriptor closed with the unread bytes: the reset) and socket.end() when it has none (FIN alone).
  Object.defineProperty(socket, 'destroySoon', {value: undefined, configurable: true})
  res.once('finish', () => {
    const cut = setTimeout(() => socket.destroy(), linger.ms)
    socket.once('close', () => clearTimeout(cut))
    let read = 0
    // Node may have set the body flowing to nowhere already; the rest is counted here instead.
    req.removeAllListeners('data')
    req.on('data', (chunk: Buffer) => {
      read += chunk.length
      if (read > linger.bytes) socket.destroy()
    })
    req.resume()
  })
}

/**
 * The same stages for an answer written on the socket itself (client-error.ts): `answer`, this side's FIN, then what
 * the client still sends is dropped until it closes, `linger.ms` pass or `linger.bytes` more arrive; then the
 * connection is cut. Without the cut the connection lasts as long as the client keeps its side open: the server
 * allows half-open connections, and no http timeout covers a socket taken out of http's hands. Returns the check of
 * the byte bound for the bytes read where no 'data' shows them (Node's parser takes a connection's bytes from the
 * socket's handle, and tells of them only by a parse error or a request): call it when it tells.
 */
export function endInStages(socket: Socket, answer: string | Buffer, linger: Linger = LINGER): () => void {
  const from = socket.bytesRead
  const check = () => {
    if (socket.bytesRead - from > linger.bytes) socket.destroy()
  }
  socket.end(answer)
  const cut = setTimeout(() => socket.destroy(), linger.ms)
  socket.once('close', () => clearTimeout(cut))
  socket.on('data', check)
  return check
}

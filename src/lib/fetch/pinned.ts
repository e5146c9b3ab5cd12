import type {Client} from 'undici'

/**
 * Where the TCP connection for an already-checked address and port is opened. The default dials the
 * address itself; tests map it to a local server. It is called only after the address passed the check,
 * so it cannot widen what is allowed.
 */
export type Dial = (address: string, port: number) => {host: string; port: number}

export const directDial: Dial = (host, port) => ({host, port})

/**
 * An undici Client for `origin` whose connections go only to `addresses` (checked beforehand), tried in
 * order until one connects. undici never resolves the name itself, so a DNS answer that changes after
 * the check (rebinding) is never used. The Host header and the TLS server name (SNI and certificate
 * check) stay the URL's hostname. `connectTimeoutMs` bounds each connection attempt.
 *
 * undici is loaded at the first call, not with this module: a server that is never asked to fetch a URL or call
 * back does not pay for its 110 modules (about 80 ms of CPU in every process and worker it starts).
 */
export async function pinnedClient(origin: string, addresses: string[], dial: Dial, connectTimeoutMs: number): Promise<Client> {
  const {Client, buildConnector} = await import('undici')
  const connect = buildConnector({timeout: connectTimeoutMs})
  return new Client(origin, {
    connect: (options, callback) => {
      const port = Number(options.port) || (options.protocol === 'https:' ? 443 : 80)
      const attempt = (i: number): void => {
        const target = dial(addresses[i], port)
        connect({...options, hostname: target.host, port: String(target.port)}, (...result) => {
          if (result[0] && i + 1 < addresses.length) attempt(i + 1)
          else callback(...result)
        })
      }
      attempt(0)
    },
  })
}

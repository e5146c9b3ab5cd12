/** The undici dispatcher of mod's own downloads and client requests: through the proxies the settings name, if any. */
import {Agent, EnvHttpProxyAgent} from 'undici'

import {ModError} from '../errors.js'

/** The proxies of the settings (https_proxy / HTTPS_PROXY, http_proxy / HTTP_PROXY, no_proxy / NO_PROXY). */
export interface ProxySettings {
  httpProxy?: string
  httpsProxy?: string
  noProxy?: string
}

/**
 * An Agent with `options`, or an EnvHttpProxyAgent with them when a proxy is set. A proxy that is not a URL is
 * `invalid_config` naming the variable, at the first use, not `internal: Invalid URL` from undici; only what connects
 * checks it, so a scan that connects nowhere runs whatever the proxy variables hold.
 */
export function dispatcherFor(options: Agent.Options, proxy: ProxySettings | undefined): Agent | EnvHttpProxyAgent {
  if (!proxy?.httpProxy && !proxy?.httpsProxy) return new Agent(options)
  for (const [name, value] of [['HTTPS_PROXY', proxy.httpsProxy], ['HTTP_PROXY', proxy.httpProxy]] as const) {
    if (value !== undefined && !URL.canParse(value)) {
      throw new ModError('invalid_config', `${name} (or ${name.toLowerCase()})=${JSON.stringify(value)} is not valid: expected a proxy URL such as http://proxy.example:3128`)
    }
  }
  // '' rather than undefined: EnvHttpProxyAgent would otherwise read the environment itself.
  return new EnvHttpProxyAgent({...options, httpProxy: proxy.httpProxy ?? '', httpsProxy: proxy.httpsProxy ?? '', noProxy: proxy.noProxy ?? ''})
}

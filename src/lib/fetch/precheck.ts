import {isIP} from 'node:net'

import {ModError} from '../errors.js'
import {checkedAddresses, checkUrl, isLoopbackName} from './target.js'

/**
 * What can be refused of a URL without resolving its host: not a URL (bad_request), a scheme, credentials or port
 * that fetchImageUrl refuses, a literal non-public address or a loopback name (url_blocked). A URL that passes is
 * still checked in full, its host resolved, when it is fetched. For manifests of many URLs, checked when accepted.
 */
export async function precheckUrl(raw: string): Promise<void> {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new ModError('bad_request', 'url is not a valid absolute URL')
  }
  checkUrl(url, 'the URL')
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1')
  // An address is judged as written; a name other than localhost is left for the resolution at fetch time.
  if (isIP(host) !== 0 || isLoopbackName(host)) await checkedAddresses(url, 'the URL', async () => [])
}

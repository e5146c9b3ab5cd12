/**
 * Variables that send every download of a `mod` command through the proxy at `url` (a server on 127.0.0.1), whatever
 * proxy variables the shell running the tests has: the lower-case spellings win over the upper-case ones, and a
 * NO_PROXY naming the download's host would let it leave the machine, so each is set here (an empty one is unset).
 */
export function onlyThroughProxy(url: string): Record<string, string> {
  return {https_proxy: url, HTTPS_PROXY: url, http_proxy: url, HTTP_PROXY: url, no_proxy: '', NO_PROXY: ''}
}

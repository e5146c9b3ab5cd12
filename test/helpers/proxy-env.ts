/**
 * Variables that send every download of a `mod` command through the proxy at `url` (a server on 127.0.0.1), whatever
 * proxy variables the shell running the tests has: the lower-case spellings win over the upper-case ones, and a
 * NO_PROXY naming the download's host would let it leave the machine, so each is set here (an empty one is unset).
 */
export function onlyThroughProxy(url: string): Record<string, string> {
  return {https_proxy: url, HTTPS_PROXY: url, http_proxy: url, HTTP_PROXY: url, no_proxy: '', NO_PROXY: ''}
}

/**
 * Variables that keep a client's requests to 127.0.0.1 off any proxy the shell running the tests names (npm reads
 * these as well as its own npm_config_* keys): the requests go straight to the server of the test.
 */
export function directToLoopback(): Record<string, string> {
  const none = {https_proxy: '', HTTPS_PROXY: '', http_proxy: '', HTTP_PROXY: '', npm_config_proxy: '', npm_config_https_proxy: ''}
  return {...none, no_proxy: '127.0.0.1', NO_PROXY: '127.0.0.1', npm_config_noproxy: '127.0.0.1'}
}

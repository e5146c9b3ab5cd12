import {ModError} from '../../lib/errors.js'

/** Certificate problems Node reports by code (its `tls` errors), as a phrase for a person. */
const CERTIFICATE_PROBLEMS: Record<string, string> = {
  DEPTH_ZERO_SELF_SIGNED_CERT: 'its certificate is self-signed',
  SELF_SIGNED_CERT_IN_CHAIN: 'its certificate chain ends in a self-signed certificate not trusted here',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'its certificate is signed by an authority not trusted here',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'its certificate is signed by an authority not trusted here',
  CERT_HAS_EXPIRED: 'its certificate has expired',
  CERT_NOT_YET_VALID: 'its certificate is not valid yet',
  ERR_TLS_CERT_ALTNAME_INVALID: 'its certificate is for another host name',
}

/**
 * A TLS failure talking to the server, as the run's error: no other try would go better (a certificate does not
 * change between tries), so it is not retried, and it says what to do rather than OpenSSL's words. Undefined for
 * any other error.
 */
export function tlsFailure(server: string, e: unknown): ModError | undefined {
  const code = (e as {code?: unknown} | undefined)?.code
  if (typeof code !== 'string') return undefined
  const certificate = CERTIFICATE_PROBLEMS[code]
  if (certificate) {
    const trust = code === 'CERT_HAS_EXPIRED' || code === 'CERT_NOT_YET_VALID' || code === 'ERR_TLS_CERT_ALTNAME_INVALID' ? '' : ': to trust it, give its authority to Node.js with NODE_EXTRA_CA_CERTS=ca.pem'
    return new ModError('server_unreachable', `the TLS connection to ${server} failed: ${certificate}${trust}`)
  }
  // OpenSSL reading a plain-HTTP answer as a TLS record.
  if (code === 'ERR_SSL_WRONG_VERSION_NUMBER' || code === 'ERR_SSL_PACKET_LENGTH_TOO_LONG' || code === 'ERR_SSL_HTTP_REQUEST') {
    return new ModError('server_unreachable', `the TLS connection to ${server} failed: the server does not speak TLS on that port (is it http://, not https://?)`)
  }
  if (code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_') || code === 'EPROTO') {
    return new ModError('server_unreachable', `the TLS connection to ${server} failed (${code})`)
  }
  return undefined
}

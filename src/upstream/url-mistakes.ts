/**
 * Upstream failures that come from a mistaken base URL rather than from the upstream, recognised so the
 * error says what to change instead of being retried as if it could heal.
 */

/**
 * TLS failures that asking again cannot heal: a certificate that is not trusted or names another host
 * (Node's and OpenSSL's verify codes: `CERT_HAS_EXPIRED`, `UNABLE_TO_VERIFY_LEAF_SIGNATURE`,
 * `ERR_TLS_CERT_ALTNAME_INVALID`, …) and a handshake the two sides cannot agree on
 * (`ERR_SSL_WRONG_VERSION_NUMBER`: the server speaks plain HTTP). A handshake timeout or a record that
 * fails mid-stream is not among them: those may be the network's.
 */
const TLS_PERMANENT =
  /^(CERT_\w+|UNABLE_TO_\w+|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|HOSTNAME_MISMATCH|INVALID_CA|INVALID_PURPOSE|ERR_TLS_CERT_ALTNAME_INVALID|ERR_SSL_\w*(WRONG_VERSION_NUMBER|HANDSHAKE_FAILURE|PROTOCOL_VERSION|UNSUPPORTED_PROTOCOL|NO_PROTOCOLS_AVAILABLE|CERTIFICATE\w*|UNKNOWN_CA|PACKET_LENGTH_TOO_LONG|HTTP_REQUEST))$/;

/** What a plain-HTTP server's answer to a TLS handshake looks like to OpenSSL. */
const NOT_TLS = /wrong version number|packet length too long|unknown protocol|http request/i;

/**
 * The sentence for a TLS failure of a request to `url` (its error `code` and `message`), or `undefined` when
 * the failure is not a TLS one. Such a failure is not retried: the server's protocol or certificate does not
 * change between two attempts.
 */
export function tlsMistake(code: string, message: string, url: URL, redirected = false): string | undefined {
  const tls = TLS_PERMANENT.test(code) || (code === 'EPROTO' && NOT_TLS.test(message));
  if (!tls) return undefined;
  if (NOT_TLS.test(message) || code === 'ERR_SSL_WRONG_VERSION_NUMBER') {
    const plain = new URL(url.href);
    plain.protocol = 'http:';
    if (redirected) {
      // The URL is the upstream's redirect target, not a setting: nothing in REPORTS_BASE_URL fixes it.
      return `${url.host} does not speak TLS (HTTPS) on this port: it answered the TLS handshake in plain HTTP; the upstream's redirect sends https:// to a plain-HTTP port`;
    }
    return (
      `${url.host} does not speak TLS (HTTPS) on this port: it answered the TLS handshake in plain HTTP. ` +
      `Use http:// in REPORTS_BASE_URL (${plain.origin}), or the port where the server serves HTTPS`
    );
  }
  return (
    `the TLS connection to ${url.host} failed (${code}): its certificate or protocol is not accepted. ` +
    'Asking again will not help: fix the server certificate, or give Node your CA bundle (NODE_EXTRA_CA_CERTS)'
  );
}

/**
 * For a 404 of `url`: a hint when its path repeats a run of segments (`/api/v1/public/api/v1/public/…`,
 * `/api/api/v1/…`), the sign of a base URL given with the API's prefix, which the request paths add again.
 */
export function doubledPrefixHint(url: URL): string | undefined {
  const segments = url.pathname.split('/').filter((s) => s !== '');
  for (let size = Math.floor(segments.length / 2); size >= 1; size--) {
    for (let at = 0; at + 2 * size <= segments.length; at++) {
      const run = segments.slice(at, at + size);
      if (run.every((s, i) => s === segments[at + size + i])) {
        const repeated = `/${run.join('/')}`;
        return (
          `the path repeats ${repeated}: REPORTS_BASE_URL (--base-url) should be the service's root, without ` +
          `the API's prefix, which each request path (REPORTS_NDJSON_PATH, REPORTS_CSV_PATH, …) adds itself`
        );
      }
    }
  }
  return undefined;
}

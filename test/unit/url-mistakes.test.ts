import { describe, expect, it } from 'vitest';
import { doubledPrefixHint, tlsMistake } from '../../src/upstream/url-mistakes.js';

describe('base-URL mistakes', () => {
  const url = new URL('https://reports.example.org:8443/api/v1/public/reports.ndjson');

  it('a plain-HTTP answer to the TLS handshake: use http://, naming the URL', () => {
    const said = tlsMistake('ERR_SSL_WRONG_VERSION_NUMBER', 'ssl3_get_record:wrong version number', url);
    expect(said).toContain('does not speak TLS');
    expect(said).toContain('http://reports.example.org:8443');
    expect(tlsMistake('EPROTO', 'write EPROTO …:wrong version number:…', url)).toContain(
      'does not speak TLS',
    );
  });

  it('a certificate refused: not retried, says what to fix', () => {
    for (const code of [
      'CERT_HAS_EXPIRED',
      'DEPTH_ZERO_SELF_SIGNED_CERT',
      'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
      'ERR_TLS_CERT_ALTNAME_INVALID',
    ]) {
      expect(tlsMistake(code, 'x', url), code).toMatch(
        /certificate or protocol is not accepted.*NODE_EXTRA_CA_CERTS/,
      );
    }
  });

  it('what may be the network is left to the retries', () => {
    for (const code of [
      'ECONNRESET',
      'ECONNREFUSED',
      'ERR_TLS_HANDSHAKE_TIMEOUT',
      'ERR_SSL_DECRYPTION_FAILED_OR_BAD_RECORD_MAC',
      'UND_ERR_SOCKET',
    ]) {
      expect(tlsMistake(code, 'x', url), code).toBeUndefined();
    }
  });

  it('a path that repeats a run of segments hints at the base URL; other paths do not', () => {
    for (const path of [
      '/api/v1/public/api/v1/public/reports.ndjson',
      '/api/v1/api/v1/public/reports.csv',
      '/api/api/v1/public/reports/stats',
    ]) {
      expect(doubledPrefixHint(new URL(path, 'http://h')), path).toMatch(/^the path repeats \/api/);
    }
    for (const path of ['/api/v1/public/reports.ndjson', '/reports/stats', '/v1/public/reports.csv']) {
      expect(doubledPrefixHint(new URL(path, 'http://h')), path).toBeUndefined();
    }
  });
});

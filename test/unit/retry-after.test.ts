import { describe, expect, it } from 'vitest';
import { parseRetryAfter } from '../../src/upstream/retry-after.js';
import { safeUrl } from '../../src/util/safe-url.js';

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-11-21T12:00:00Z');
  it('reads seconds and HTTP dates; 0, past and garbage are no hint', () => {
    expect(parseRetryAfter('3', now)).toBe(3000);
    expect(parseRetryAfter('Sat, 21 Nov 2026 12:00:05 GMT', now)).toBe(5000);
    expect(parseRetryAfter('0', now)).toBeUndefined();
    expect(parseRetryAfter('Sat, 21 Nov 2026 11:00:00 GMT', now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });
});

describe('safeUrl', () => {
  it('removes credentials from URLs', () => {
    expect(safeUrl('http://user:pw@127.0.0.1/x?api_key=s3cret&page=2')).toBe(
      'http://127.0.0.1/x?api_key=%5Bredacted%5D&page=2',
    );
    for (const name of ['sig', 'signature', 'client_secret', 'access_key', 'auth', 'X-Amz-Signature']) {
      expect(safeUrl(`http://127.0.0.1/x?${name}=s3cret&page=2`), name).not.toContain('s3cret');
    }
  });
});

import type { FastifyRequest } from 'fastify';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { publicLink } from '../../src/reader/public-link.js';

// A `Link` is absolute only from what the operator vouches for, and then it is a link to the reader: the
// forwarded host of a proxy that passes clients' headers on cannot make it point anywhere else.

const trusting = loadConfig({}, { readerTrustProxy: true });
const PATH = '/api/v1/public/reports.csv?pageSize=5&page=2';
const requestFrom = (protocol: string, host: string) =>
  ({ protocol, host, headers: { 'x-forwarded-host': host } }) as unknown as FastifyRequest;

describe('publicLink behind a trusted proxy', () => {
  it('is absolute on a forwarded http(s) host[:port], else relative', () => {
    expect(publicLink(trusting, requestFrom('https', 'dash.example.org'), PATH)).toBe(
      `https://dash.example.org${PATH}`,
    );
    expect(publicLink(trusting, requestFrom('http', '[::1]:8080'), PATH)).toBe(`http://[::1]:8080${PATH}`);
    for (const [protocol, host] of [
      ['https', 'evil.example/steal?x='],
      ['https', 'a>; rel="next", <http://x'],
      ['javascript', 'dash.example.org'],
      ['https', 'user:pw@evil.example'],
    ] as const) {
      expect(publicLink(trusting, requestFrom(protocol, host), PATH)).toBe(PATH);
    }
  });

  it('never links to another origin than the forwarded host names, whatever the header holds', () => {
    fc.assert(
      fc.property(fc.constantFrom('http', 'https', 'ftp', 'javascript'), fc.string(), (protocol, host) => {
        const link = publicLink(trusting, requestFrom(protocol, host), PATH);
        if (link === PATH) return;
        const url = new URL(link);
        expect(url.protocol).toBe(`${protocol}:`);
        expect(url.host).toBe(new URL(`${protocol}://${host}`).host);
        expect(url.username + url.password).toBe('');
        expect(`${url.pathname}${url.search}`).toBe(PATH);
      }),
      { numRuns: 500 },
    );
  });
});

describe('REPORTS_PUBLIC_URL', () => {
  it.each([
    'https://x.example?a=1',
    'https://x.example/#top',
    'https://u:p@x.example',
    'https://x.example/api/v1/public/',
  ])('%s is refused: links append the API path to it', (url) => {
    expect(() => loadConfig({ REPORTS_PUBLIC_URL: url })).toThrow(/REPORTS_PUBLIC_URL/);
  });

  it('a root with a path of its own is taken', () => {
    expect(loadConfig({ REPORTS_PUBLIC_URL: 'https://x.example/mirror/' }).publicUrl).toBe(
      'https://x.example/mirror',
    );
  });
});

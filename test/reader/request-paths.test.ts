import { request } from 'node:http';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSyncedReader, type SyncedReader } from '../helpers/reader.js';

// The mirror routes a request target as the upstream does: dot segments resolved, `%XX` in the path left as
// sent (a path naming a resource only once decoded names none), and every answer says how to cache it.

let ctx: SyncedReader;
beforeAll(async () => {
  ctx = await startSyncedReader({ generate: { n: 30, seed: 7 } });
});
afterAll(async () => ctx.close());

/** GET of a raw request target (fetch would resolve `.` and `..` itself), without following anything. */
function get(base: string, target: string): Promise<{ status: number; cacheControl?: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${target.startsWith('/') ? '' : '/'}`, { path: target }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, cacheControl: res.headers['cache-control'], body }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

const SEGMENTS = [
  'api',
  'v1',
  'public',
  'reports',
  'reports.csv',
  'reports.geojson',
  'stats',
  '.',
  '..',
  'repo%72ts',
  'reports%2ecsv',
  '%70ublic',
  'x',
  '',
];

describe('request paths', () => {
  it.each([
    '/api/v1/public/reports/./stats',
    '/api/v1/public/x/../reports?pageSize=2',
    '/api/v1/public/repo%72ts',
    '/api/v1/%70ublic/reports?pageSize=1',
    '/api/v1/%70ublic/reports?pageSize=0',
    '/api/v1/public/reports%2ecsv',
    // Origin-form: `//api/…` is a path, not the host `api`.
    '//api/v1/public/reports?pageSize=1',
    '//?pageSize=2',
  ])('%s is answered as the upstream answers it, with a Cache-Control', async (target) => {
    const [upstream, mirror] = await Promise.all([
      get(ctx.simulator.url, target),
      get(ctx.reader.url, target),
    ]);
    expect(mirror.status).toBe(upstream.status);
    expect(mirror.cacheControl).toBe(mirror.status >= 400 ? 'no-store' : 'no-cache');
    if (mirror.status === 404) expect(JSON.parse(mirror.body)).toEqual(JSON.parse(upstream.body));
  });

  it.each([
    '/api/v1/public/reports#top?status=SUBMITTED&pageSize=1',
    '/api/v1/public/reports.geojson#?status=SUBMITTED',
    '/api/v1/public/reports.csv#?pageSize=2',
    '/api/v1/public/reports/stats#?x=1',
    '/api/v1/public/reports?pageSize=3#?pageSize=1',
  ])('%s: a fragment is no query, on the mirror as upstream', async (target) => {
    const withoutFragment = target.slice(0, target.indexOf('#'));
    const [upstream, mirror, plain] = await Promise.all([
      get(ctx.simulator.url, target),
      get(ctx.reader.url, target),
      get(ctx.reader.url, withoutFragment),
    ]);
    expect(mirror.status).toBe(200);
    expect(mirror.body).toBe(plain.body);
    // The upstream redirects the CSV export to its first page; the mirror serves it where it is asked.
    if (!target.includes('.csv')) expect(mirror.body).toBe(upstream.body);
  });

  it('any path of API-like segments gets the upstream status, and every answer a Cache-Control', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom(...SEGMENTS), { minLength: 1, maxLength: 6 }),
        async (segments) => {
          const target = `/${segments.join('/')}?pageSize=2`;
          const [upstream, mirror] = await Promise.all([
            get(ctx.simulator.url, target),
            get(ctx.reader.url, target),
          ]);
          // The mirror's own pages (`/`, `/healthz`, …) are no upstream's: only API paths are compared.
          if (new URL(`http://x${target}`).pathname.startsWith('/api/')) {
            expect(mirror.status, target).toBe(upstream.status);
          }
          expect(mirror.cacheControl, target).toBeDefined();
        },
      ),
      { numRuns: 150 },
    );
  });
});

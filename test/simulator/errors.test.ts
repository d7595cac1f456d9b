import { describe, expect, it } from 'vitest';
import { simulatorForSuite } from '../helpers/simulator.js';

interface ErrorBody {
  error: { code: string; message: string; details?: Array<{ param: string; message: string }> };
}

describe('error answers', () => {
  const sim = simulatorForSuite({ fixture: 'small.ndjson' });

  it.each([
    ['/reports?pageSize=abc', 'pageSize', 'must be an integer from 1 to 1000'],
    ['/reports?page=-1', 'page', 'must be an integer from 1 to 1000000000'],
    ['/reports?page=0', 'page', 'must be an integer from 1 to 1000000000'],
    ['/reports?sort=id', 'sort', 'unknown parameter (allowed: destination, status, pageSize, page)'],
    ['/exports/reports.csv?pageSize=20000', 'pageSize', 'must be an integer from 1 to 10000'],
    ['/reports.geojson?page=2', 'page', 'unknown parameter (allowed: destination, status)'],
    ['/reports.ndjson?since=2024-01-01', 'since', 'unknown parameter (this endpoint takes no parameters)'],
    ['/reports/stats?x=1', 'x', 'unknown parameter (this endpoint takes no parameters)'],
  ])('400 INVALID_QUERY for %s', async (path, param, message) => {
    const res = await fetch(sim().api(path));
    expect(res.status).toBe(400);
    const body = (await res.json()) as ErrorBody;
    expect(body.error.code).toBe('INVALID_QUERY');
    expect(body.error.details).toEqual([{ param, message }]);
    expect(body.error.message).toContain(`${param} ${message}`);
  });

  it('404 NOT_FOUND for an unknown path', async () => {
    for (const path of [
      `${sim().url}/api/v1/public/nothing`,
      `${sim().url}/`,
      `${sim().url}/api/v2/public/reports`,
    ]) {
      const res = await fetch(path);
      expect(res.status).toBe(404);
      expect(((await res.json()) as ErrorBody).error.code).toBe('NOT_FOUND');
    }
  });

  it('405 with Allow: GET, HEAD for another method on a known path', async () => {
    for (const method of ['POST', 'PUT', 'DELETE']) {
      const res = await fetch(sim().api('/reports'), { method });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('GET, HEAD');
      expect(((await res.json()) as ErrorBody).error.code).toBe('METHOD_NOT_ALLOWED');
    }
  });
});

describe('admin endpoints', () => {
  const sim = simulatorForSuite({ fixture: 'small.ndjson' });

  it('sets, lists and clears faults over HTTP (objects or compact strings)', async () => {
    const set = await fetch(`${sim().url}/__admin/faults`, {
      method: 'POST',
      body: JSON.stringify(['stats:status=503,times=1', { endpoint: 'list', kind: 'latency', ms: 1 }]),
    });
    expect(set.status).toBe(200);
    const listed = (await set.json()) as { faults: Array<{ kind: string; used: number }> };
    expect(listed.faults.map((f) => [f.kind, f.used])).toEqual([
      ['status', 0],
      ['latency', 0],
    ]);
    expect((await fetch(sim().api('/reports/stats'))).status).toBe(503);
    expect((await fetch(sim().api('/reports/stats'))).status).toBe(200);
    const bad = await fetch(`${sim().url}/__admin/faults`, { method: 'POST', body: '["list:malformed"]' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as ErrorBody).error.message).toContain('malformed applies to ndjson');
    expect((await fetch(`${sim().url}/__admin/faults`, { method: 'DELETE' })).status).toBe(200);
    expect(sim().faults()).toEqual([]);
  });

  it('advances days over HTTP and logs requests with their headers', async () => {
    const before = sim().dataset.version;
    const res = await fetch(`${sim().url}/__admin/advance?days=2`, { method: 'POST' });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ day: 2, version: sim().dataset.version });
    expect(sim().dataset.version).not.toBe(before);
    expect((await fetch(`${sim().url}/__admin/advance?days=x`, { method: 'POST' })).status).toBe(400);
    expect((await fetch(`${sim().url}/__admin/advance`)).status).toBe(405);

    await fetch(sim().api('/reports?pageSize=1'), { headers: { 'X-API-Key': 'k-123' } });
    const log = (await (await fetch(`${sim().url}/__admin/requests`)).json()) as Array<{
      method: string;
      path: string;
      headers: Record<string, string>;
      status?: number;
    }>;
    const entry = log.find((e) => e.path === '/api/v1/public/reports?pageSize=1');
    expect(entry).toMatchObject({ method: 'GET', status: 200 });
    expect(entry?.headers['x-api-key']).toBe('k-123');
    // The listing includes its own request (still in flight, so without a status).
    expect(log.at(-1)).toMatchObject({ method: 'GET', path: '/__admin/requests' });
    expect(log.at(-1)?.status).toBeUndefined();
    expect(sim().requests()).toHaveLength(log.length);
  });
});

import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PUBLIC_PREFIX } from '../../src/schema/public-query.js';
import { startSimulator, type SimulatorHandle } from '../../src/simulator/server.js';
import { testDataset } from '../helpers/simulator.js';

// `--cache-exports`: the NDJSON export and each fault-free CSV page are written once (keyed by ETag, and
// pageSize and page for CSV) and later requests for them are served from the file with Content-Length; a
// faulty body is never cached.
describe('simulator export cache (exportCacheDir)', () => {
  let dir: string;
  let sim: SimulatorHandle;
  const page2 = () => `${sim.url}${PUBLIC_PREFIX}/reports.csv?pageSize=5&page=2`;
  const csvFiles = () => readdirSync(dir).filter((f) => f.endsWith('.csv'));

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'reports-sync-csv-cache-'));
    sim = await startSimulator({
      dataset: await testDataset({ fixture: 'small.ndjson' }),
      exportCacheDir: dir,
    });
  });
  afterEach(async () => {
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves a page from the cache file the second time, byte-identical, with Content-Length', async () => {
    const first = await fetch(page2());
    expect(first.status).toBe(200);
    const firstBody = Buffer.from(await first.arrayBuffer());
    expect(first.headers.get('content-length')).toBeNull(); // rendered: chunked
    expect(csvFiles()).toHaveLength(1);
    expect(readdirSync(dir).some((f) => f.endsWith('.partial'))).toBe(false);

    const second = await fetch(page2());
    expect(second.status).toBe(200);
    const secondBody = Buffer.from(await second.arrayBuffer());
    expect(secondBody.equals(firstBody)).toBe(true);
    expect(second.headers.get('content-length')).toBe(String(firstBody.length));
    for (const name of ['etag', 'last-modified', 'link', 'content-type', 'cache-control']) {
      expect(second.headers.get(name), name).toBe(first.headers.get(name));
    }
    expect(second.headers.get('link')).toBe(
      `<${sim.url}${PUBLIC_PREFIX}/exports/reports.csv?pageSize=5&page=3>; rel="next"`,
    );

    // Another page (or page size) has its own file; 304 and HEAD are unchanged.
    await (await fetch(`${sim.url}${PUBLIC_PREFIX}/reports.csv?pageSize=5&page=3`)).arrayBuffer();
    expect(csvFiles()).toHaveLength(2);
    const etag = second.headers.get('etag')!;
    const notModified = await fetch(page2(), { headers: { 'If-None-Match': etag } });
    expect(notModified.status).toBe(304);
    const head = await fetch(page2(), { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('link')).toBe(second.headers.get('link'));
  });

  it('neither caches nor serves from the cache while a body fault is active', async () => {
    sim.setFaults(['csv:csvWart=raggedRow,at=0']);
    const warty = await (await fetch(page2())).text();
    expect(csvFiles()).toHaveLength(0);

    sim.clearFaults();
    const clean = await (await fetch(page2())).text();
    expect(clean).not.toBe(warty);
    expect(csvFiles()).toHaveLength(1);

    // With the page cached, a fault still shapes the body (it is rendered, not read from the file).
    sim.setFaults(['csv:csvWart=raggedRow,at=0']);
    const again = await fetch(page2());
    expect(again.headers.get('content-length')).toBeNull();
    expect(await again.text()).toBe(warty);
  });

  it('serves the NDJSON export from its cache file the second time, byte-identical', async () => {
    const url = `${sim.url}${PUBLIC_PREFIX}/reports.ndjson`;
    const first = await fetch(url);
    const firstBody = Buffer.from(await first.arrayBuffer());
    expect(first.headers.get('content-length')).toBeNull(); // rendered: chunked
    expect(readdirSync(dir).filter((f) => f.endsWith('.ndjson'))).toHaveLength(1);
    const second = await fetch(url);
    const secondBody = Buffer.from(await second.arrayBuffer());
    expect(secondBody.equals(firstBody)).toBe(true);
    expect(secondBody.toString('utf8').endsWith('}\n')).toBe(true);
    expect(second.headers.get('content-length')).toBe(String(firstBody.length));
    expect(second.headers.get('etag')).toBe(first.headers.get('etag'));
  });

  it("keeps only the current data state: a simulated day later, the previous state's files are gone", async () => {
    const url = `${sim.url}${PUBLIC_PREFIX}/reports.ndjson`;
    await (await fetch(url)).arrayBuffer();
    await (await fetch(page2())).arrayBuffer();
    const before = readdirSync(dir);
    expect(before).toHaveLength(2);
    sim.advanceDays(1);
    const next = await fetch(url);
    const body = Buffer.from(await next.arrayBuffer());
    const after = readdirSync(dir);
    // The new export alone: the old export and the old page were of a state no request can ask for.
    expect(after).toHaveLength(1);
    expect(before).not.toContain(after[0]);
    const again = await fetch(url);
    expect(Buffer.from(await again.arrayBuffer()).equals(body)).toBe(true);
    expect(again.headers.get('content-length')).toBe(String(body.length));
  });
});

import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { idleDecoderThreads, prestartDecoders, workerScript } from '../../src/normalize/decoder-threads.js';
import { startDecoders } from '../../src/normalize/decoders.js';
import { loadDataset } from '../../src/simulator/load-dataset.js';
import { startSimulator, type SimulatorHandle } from '../../src/simulator/server.js';
import { csvSource } from '../../src/sync/sources/csv-source.js';
import { KnownLines } from '../../src/normalize/known-lines.js';
import { ndjsonSource } from '../../src/sync/sources/ndjson-source.js';
import { sampleDatasetPath } from '../../src/util/package-root.js';
import { openTestWarehouse, query, syncOnce, tempDir, testConfig } from '../helpers/sync.js';

// Issue #7: NDJSON lines and CSV pages are decoded in worker threads (REPORTS_DECODE_WORKERS). The warehouse
// must not tell which thread decoded a record: the real sample with its warts, malformed lines or broken CSV
// rows and duplicates loads to the same reports, versions and quarantine with 0 (main thread) and more
// workers, and a re-sync still skips every known line.

const REPORTS = `SELECT id, status, destination, category, description, lat, lng, address, created_at, updated_at,
  extra::VARCHAR AS extra, content_hash, line_hash FROM reports ORDER BY id`;
const REJECTS = `SELECT location, line, record_id, raw, raw_truncated, raw_bytes, issues::VARCHAR AS issues
  FROM rejected_records ORDER BY location, line`;

describe('NDJSON decode workers', () => {
  let tmp: ReturnType<typeof tempDir>;
  let sim: SimulatorHandle;

  beforeEach(async () => {
    tmp = tempDir();
    const dataset = await loadDataset(sampleDatasetPath());
    sim = await startSimulator({
      dataset,
      faults: [
        'ndjson:malformed,at=3+500',
        'ndjson:duplicates=97',
        'ndjson:giant=2000000,at=7',
        'csv:duplicates=89',
        'csv:csvWart=raggedRow,at=4',
        'csv:csvWart=unclosedQuote,at=9',
      ],
    });
  });
  afterEach(async () => {
    await sim.close();
    tmp.cleanup();
  });

  // Without the built worker script (npm test builds first) every run would decode inline, and the test would
  // compare inline with inline.
  async function expectRealWorkers(n: number) {
    const decoders = startDecoders(n, await KnownLines.empty('ndjson'), 1024);
    expect(decoders.workers).toBe(n);
    await decoders.close();
  }

  async function load(workers: number, source = ndjsonSource) {
    const config = testConfig(sim.url, join(tmp.dir, `${source.name}${workers}.duckdb`), {
      decodeWorkers: workers,
      csvPageSize: 500,
      conditionalExports: false, // the second run re-reads the export (known lines), not a 304
    });
    const warehouse = await openTestWarehouse(config);
    try {
      const first = await syncOnce(warehouse, config, source);
      const second = await syncOnce(warehouse, config, source);
      return {
        first: first.counters,
        second: second.counters,
        reports: await query(warehouse, REPORTS),
        rejects: await query(warehouse, REJECTS),
      };
    } finally {
      warehouse.close();
    }
  }

  it('loads the same warehouse whichever thread decodes', async () => {
    await expectRealWorkers(3);
    const inline = await load(0);
    expect(inline.first.recordsRejected).toBeGreaterThanOrEqual(4); // 2 malformed, the giant line, sample warts
    expect(inline.first.duplicates).toBeGreaterThan(0);
    expect(inline.second).toMatchObject({ unchanged: inline.reports.length, inserted: 0, updated: 0 });
    for (const workers of [1, 3]) {
      const threaded = await load(workers);
      expect(threaded.first).toEqual(inline.first);
      expect(threaded.second).toEqual(inline.second);
      expect(threaded.reports).toEqual(inline.reports);
      expect(threaded.rejects).toEqual(inline.rejects);
    }
  });

  it('loads the same warehouse with threads started before the run', async () => {
    const inline = await load(0);
    prestartDecoders(2); // what `reports-sync sync` does while it opens the warehouse
    expect(idleDecoderThreads()).toBe(2);
    const prestarted = await load(2);
    expect(idleDecoderThreads()).toBe(0); // the first run took them, the second started its own
    expect(prestarted).toEqual(inline);
  });

  it('never keeps a process alive with prestarted threads no run took', () => {
    const module = join(workerScript()!, '..', 'decoder-threads.js');
    const code = `import(${JSON.stringify(module)}).then((m) => m.prestartDecoders(2))`;
    // Exits by itself (a kept-alive process would run into the timeout and throw).
    execFileSync(process.execPath, ['-e', code], { timeout: 20_000 });
  });

  it('loads the same warehouse from the CSV export whichever thread decodes its pages', async () => {
    await expectRealWorkers(2);
    const inline = await load(0, csvSource);
    expect(inline.first.pages).toBeGreaterThan(10);
    expect(inline.first.recordsRejected).toBeGreaterThan(20); // a ragged row and a broken quote per page
    expect(inline.first.duplicates).toBeGreaterThan(0);
    expect(inline.rejects.some((r) => /^page \d+, row \d+, line \d+$/.test(String(r.location)))).toBe(true);
    expect(inline.second).toMatchObject({ unchanged: inline.reports.length, inserted: 0, updated: 0 });
    const threaded = await load(2, csvSource);
    expect(threaded.first).toEqual(inline.first);
    expect(threaded.second).toEqual(inline.second);
    expect(threaded.reports).toEqual(inline.reports);
    expect(threaded.rejects).toEqual(inline.rejects);
  });
});

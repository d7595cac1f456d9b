import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { exitCodeFor } from '../../src/cli/exit-codes.js';
import { validateWireReport } from '../../src/schema/report.js';
import { toWire } from '../../src/schema/wire-format.js';
import { computeStats } from '../../src/schema/stats.js';
import type { Dataset } from '../../src/simulator/dataset.js';
import { generateDataset, isoString } from '../../src/simulator/generate.js';
import { loadDataset } from '../../src/simulator/load-dataset.js';
import { fixturePath } from '../helpers/simulator.js';

const NEWEST_FIRST = ['A10', 'A7', 'A3', 'A4', 'A2', 'A8', 'A1', 'A9', 'A6', 'A5'];

function exportLines(dataset: Dataset): string[] {
  return [...dataset.exportEntries()].map((e) =>
    e.kind === 'report' ? JSON.stringify(toWire(e.report)) : e.raw,
  );
}

describe('loadDataset', () => {
  it('keeps valid lines as reports and the rest as warts with their raw text, in file order', async () => {
    const ds = await loadDataset(fixturePath('small.ndjson'));
    const entries = [...ds.exportEntries()];
    expect(entries.map((e) => e.kind)).toEqual([
      'report', 'report', 'report', 'wart', 'report', 'report', 'wart',
      'report', 'wart', 'report', 'wart', 'report', 'report', 'report',
    ]); // prettier-ignore
    const warts = entries.flatMap((e) => (e.kind === 'wart' ? [e] : []));
    expect(warts.map((w) => w.line)).toEqual([4, 7, 9, 11]);
    expect(warts[3]?.raw).toBe('{"id": "broken", "status":');
    expect(warts.every((w) => w.issues.length > 0)).toBe(true);
    // The CRLF line ending is not part of the entry.
    const last = entries.at(-1);
    expect(last?.kind === 'report' && last.report.id).toBe('A10');
    expect(ds.exportCount).toBe(14);
    expect(ds.extraColumns).toEqual(['channel', 'photos', 'tags']);
  });

  it('serves valid reports newest first and counts them', async () => {
    const ds = await loadDataset(fixturePath('small.ndjson'));
    expect(ds.query({}, 0, 100).map((r) => r.id)).toEqual(NEWEST_FIRST);
    expect(ds.stats()).toEqual(computeStats(ds.published()));
    expect(ds.stats().total).toBe(10);
    expect(ds.lastModified.toISOString()).toBe('2024-03-06T21:10:00.000Z');
  });

  it('keeps the newest of duplicate ids in the database, but exports every line', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sim-dataset-'));
    try {
      const line = (status: string, updatedAt: string) =>
        JSON.stringify({
          id: 'D',
          status,
          destination: 'ROAD_CONTROL',
          createdAt: '2024-01-01T00:00:00Z',
          updatedAt,
        });
      const path = join(dir, 'dup.ndjson');
      writeFileSync(
        path,
        `\uFEFF${line('IN_PROGRESS', '2024-01-03T00:00:00Z')}\n\n${line('SUBMITTED', '2024-01-01T00:00:00Z')}\n`,
      );
      const ds = await loadDataset(path);
      expect(ds.exportCount).toBe(2);
      expect(ds.getReport('D')?.status).toBe('IN_PROGRESS');
      expect(ds.stats().total).toBe(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('says which file is missing', async () => {
    const err = await loadDataset('/nonexistent/reports.ndjson').catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'DATASET_NOT_FOUND' });
    expect(exitCodeFor(err)).toBe(2);
  });
});

describe('generateDataset', () => {
  it('is deterministic: same (n, seed) → same export; another seed → another one', () => {
    const a = exportLines(generateDataset(300, 7));
    expect(exportLines(generateDataset(300, 7))).toEqual(a);
    expect(exportLines(generateDataset(300, 8))).not.toEqual(a);
  });

  it('derives any record on its own, without generating the ones before it', () => {
    const ds = generateDataset(4_000_000, 3);
    const [late] = [...ds.exportEntries(3_999_990, 1)];
    const [again] = [...generateDataset(4_000_000, 3).exportEntries(3_999_990, 1)];
    expect(late).toEqual(again);
    expect(late?.kind === 'report' && late.report.id).toBe('R-03999990');
  });

  it('holds nothing per record: 4,000,000 reports cost no memory until read', () => {
    global.gc?.();
    const before = process.memoryUsage().heapUsed;
    const started = performance.now();
    const ds = generateDataset(4_000_000, 1);
    expect(performance.now() - started).toBeLessThan(50);
    expect(ds.exportCount).toBe(4_000_000);
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(5_000_000);
  });

  it('produces valid, realistic reports: sizes, destinations, statuses, increasing createdAt', () => {
    const ds = generateDataset(5000, 11);
    const lines = exportLines(ds);
    const sizes = lines.map((l) => Buffer.byteLength(l) + 1);
    const mean = sizes.reduce((a, b) => a + b, 0) / sizes.length;
    expect(mean).toBeGreaterThan(400);
    expect(mean).toBeLessThan(520);
    const reports = lines.map((l) => validateWireReport(JSON.parse(l)));
    expect(reports.every((r) => r.ok)).toBe(true);
    const valid = reports.flatMap((r) => (r.ok ? [r.report] : []));
    const stats = ds.stats();
    expect(Object.keys(stats.byDestination)).toContain('ROAD_CONTROL');
    expect(Object.keys(stats.byStatus).sort()).toEqual(['IN_PROGRESS', 'REJECTED', 'RESOLVED', 'SUBMITTED']);
    expect(valid.some((r) => r.lat === null)).toBe(true);
    expect(lines.some((l) => Buffer.byteLength(l) > l.length)).toBe(true);
    expect(valid.every((r) => r.extra !== null && typeof r.extra.channel === 'string')).toBe(true);
    for (let i = 1; i < valid.length; i++) expect(valid[i]!.createdAt > valid[i - 1]!.createdAt).toBe(true);
    expect(stats).toEqual(computeStats(valid));
  });

  it('formats timestamps exactly like Date#toISOString', () => {
    for (const ms of [0, 1_704_067_199_999, 1_735_689_600_000, 253_402_300_799_999, 1_709_759_400_123]) {
      expect(isoString(ms)).toBe(new Date(ms).toISOString());
    }
  });
});

describe('Dataset.advanceDays', () => {
  it('is deterministic by seed, and n days at once equal n single days', async () => {
    const a = await loadDataset(fixturePath('small.ndjson'), { seed: 5 });
    const b = await loadDataset(fixturePath('small.ndjson'), { seed: 5 });
    a.advanceDays(3);
    b.advanceDays(1);
    b.advanceDays(2);
    expect(exportLines(a)).toEqual(exportLines(b));
    expect(a.version).toBe(b.version);
    const c = await loadDataset(fixturePath('small.ndjson'), { seed: 6 });
    c.advanceDays(3);
    expect(exportLines(c)).not.toEqual(exportLines(a));
  });

  it('moves statuses forward, adds reports, unpublishes some, and changes the version', async () => {
    const ds = await loadDataset(fixturePath('small.ndjson'), { seed: 2 });
    const before = new Map(ds.query({}, 0, 100).map((r) => [r.id, r]));
    const version = ds.version;
    const summary = ds.advanceDays(1);
    expect(summary).toMatchObject({ day: 1, version: ds.version });
    expect(ds.version).not.toBe(version);
    expect(summary.moved).toBeGreaterThan(0);
    expect(summary.added).toBeGreaterThan(0);
    expect(summary.unpublished).toBeGreaterThan(0);
    const after = new Map(ds.query({}, 0, 100).map((r) => [r.id, r]));
    const order = ['SUBMITTED', 'IN_PROGRESS', 'RESOLVED'];
    let moved = 0;
    for (const [id, old] of before) {
      const now = after.get(id);
      if (!now) continue; // unpublished
      if (now.status === old.status) continue;
      moved++;
      if (old.status === 'SUBMITTED') expect(now.status).toBe('IN_PROGRESS');
      else expect(['RESOLVED', 'REJECTED']).toContain(now.status);
      expect(order.indexOf(old.status)).toBeGreaterThanOrEqual(0);
      expect(now.updatedAt > old.updatedAt).toBe(true);
      expect(now.updatedAt.startsWith('2024-03-0')).toBe(true);
    }
    expect(moved).toBe(summary.moved);
    const gone = [...before.keys()].filter((id) => !after.has(id));
    expect(gone).toHaveLength(summary.unpublished);
    const added = [...after.values()].filter((r) => !before.has(r.id));
    expect(added).toHaveLength(summary.added);
    expect(added.every((r) => r.status === 'SUBMITTED' && r.id.startsWith('SIM-1-'))).toBe(true);
    // New reports are the newest; the unpublished leave the export too (warts stay).
    expect(ds.query({}, 0, 1)[0]?.id).toBe(added.at(-1)?.id);
    expect(ds.exportCount).toBe(14 - gone.length + added.length);
    expect(ds.stats().total).toBe(after.size);
  });

  it('advances a generated dataset at its own creation rate, in constant memory of the base', () => {
    const ds = generateDataset(3650, 4);
    const summary = ds.advanceDays(2);
    expect(summary.added).toBeGreaterThanOrEqual(18);
    expect(summary.added).toBeLessThanOrEqual(22);
    const newest = ds.query({}, 0, 1)[0];
    expect(newest?.id).toBe(`R-${String(3650 + summary.added - 1).padStart(8, '0')}`);
    expect(newest?.createdAt.startsWith('2025-01-02')).toBe(true);
    expect(ds.stats().total).toBe(3650 + summary.added - summary.unpublished);
    const again = generateDataset(3650, 4);
    again.advanceDays(2);
    expect(exportLines(again)).toEqual(exportLines(ds));
  });
});

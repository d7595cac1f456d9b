import type { DuckDBConnection } from '@duckdb/node-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import { printRunSummaries } from '../../src/cli/print-summary.js';
import { currentCountsRelation } from '../../src/warehouse/current-counts.js';
import { withSyncedWarehouse } from '../helpers/stored-order.js';
import { syncTargetOnce, tempDir } from '../helpers/sync.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

/** `destination|status|reports` lines of a relation with those columns, sorted. */
async function countLines(c: DuckDBConnection, relation: string): Promise<string[]> {
  const rows = await c.runAndReadAll(
    `SELECT destination || '|' || status || '|' || reports::BIGINT FROM (${relation}) ORDER BY 1`,
  );
  return rows.getRows().map((row) => String(row[0]));
}

/** The counts a scan of every current report gives: what the summary printed before it read the index. */
const SCANNED = `SELECT destination, status, count(*) AS reports FROM reports WHERE removed_at IS NULL GROUP BY ALL`;

/** What the sync summary prints of the warehouse at `width` columns: the whole text, and its table's lines. */
async function printedCounts(c: DuckDBConnection, width: number): Promise<{ text: string; table: string[] }> {
  let text = '';
  const out = new Writable({
    write(chunk: Buffer, _enc, done) {
      text += chunk.toString();
      done();
    },
  });
  await printRunSummaries(c, [], out, width);
  return { text, table: text.split('\n').filter((l) => /^\s{2}\S/.test(l)) };
}

describe('current reports by destination and status (the sync summary)', () => {
  it('equal a count of every current report, from the serving index and without one', async () => {
    await withSyncedWarehouse(tmp.dir, { n: 2500, seed: 9 }, async ({ sim, config, warehouse, c }) => {
      for (let night = 0; night < 3; night++) {
        // A day moves statuses, adds reports and unpublishes some: every kind of change the index follows.
        sim.advanceDays(1);
        const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
        expect(run?.status).toBe('succeeded');
        expect(run!.counters.removed + run!.counters.updated).toBeGreaterThan(0);
        const indexed = await currentCountsRelation(c);
        expect(indexed).toContain('reader_page_counts');
        const scanned = await countLines(c, SCANNED);
        expect(scanned.length).toBeGreaterThan(4);
        expect(await countLines(c, indexed)).toEqual(scanned);
      }
      // A warehouse whose index is not built (before its first open, or emptied by a reset) counts rows.
      await c.run('UPDATE reader_serving SET bucket_us = NULL');
      const counted = await currentCountsRelation(c);
      expect(counted).not.toContain('reader_page_counts');
      expect(await countLines(c, counted)).toEqual(await countLines(c, SCANNED));
    });
  });

  it('leaves out a pair whose last report went, as a count of rows does', async () => {
    await withSyncedWarehouse(tmp.dir, { n: 400, seed: 3 }, async ({ c }) => {
      const pair = (
        await c.runAndReadAll(
          `SELECT destination, status FROM reports WHERE removed_at IS NULL GROUP BY ALL ORDER BY count(*) LIMIT 1`,
        )
      ).getRows()[0]!;
      // The index as a run leaves it when the pair's reports are all removed: a zero count kept as a row.
      await c.run(`UPDATE reader_page_counts SET reports = 0 WHERE destination = $d AND status = $s`, {
        d: String(pair[0]),
        s: String(pair[1]),
      });
      const lines = await countLines(c, await currentCountsRelation(c));
      expect(lines.some((l) => l.startsWith(`${String(pair[0])}|${String(pair[1])}|`))).toBe(false);
    });
  });

  it('prints 0, not a blank, for a destination with no report of a status', async () => {
    await withSyncedWarehouse(tmp.dir, { n: 600, seed: 11 }, async ({ c }) => {
      const [d, st] = (
        await c.runAndReadAll(
          `SELECT destination, status FROM reports WHERE removed_at IS NULL GROUP BY ALL ORDER BY count(*) LIMIT 1`,
        )
      ).getRows()[0]!;
      await c.run(`UPDATE report_rows SET removed_at = now() WHERE destination = $d AND status = $s`, {
        d: String(d),
        s: String(st),
      });
      for (const indexed of [false, true]) {
        if (indexed) {
          await c.run(`DELETE FROM reader_page_counts WHERE destination = $d AND status = $s`, {
            d: String(d),
            s: String(st),
          });
        } else await c.run('UPDATE reader_serving SET bucket_us = NULL');
        const { table } = await printedCounts(c, 200);
        const header = table[0]!.trim().split(/\s{2,}/);
        expect(header).toContain(String(st));
        const row = table
          .find((l) => l.trim().startsWith(`${String(d)} `))!
          .trim()
          .split(/\s{2,}/);
        expect(row).toHaveLength(header.length);
        expect(row[header.indexOf(String(st))]).toBe('0');
        if (!indexed) await c.run('UPDATE reader_serving SET bucket_us = 1');
      }
    });
  });

  it('prints one column per stored status, whatever its text: case, digits, a clash with "destination"', async () => {
    await withSyncedWarehouse(tmp.dir, { n: 600, seed: 5 }, async ({ c }) => {
      // Codes are open-ended upstream text: DuckDB's PIVOT renamed `Submitted` beside `SUBMITTED`, and
      // JavaScript moved a column named `3` before `destination`.
      const odd = ['Submitted', 'destination', '3', 'SUBMITTED ', '\u001b[2J'];
      const ids = (await c.runAndReadAll('SELECT id FROM reports ORDER BY id LIMIT 5')).getRows();
      for (const [i, status] of odd.entries()) {
        await c.run('UPDATE report_rows SET status = $s WHERE id = $id', {
          s: status,
          id: String(ids[i]![0]),
        });
      }
      await c.run('UPDATE reader_serving SET bucket_us = NULL');
      const { text, table } = await printedCounts(c, 400);
      const header = table[0]!.trim().split(/\s{2,}/);
      const stored = (await c.runAndReadAll('SELECT DISTINCT status FROM reports WHERE removed_at IS NULL'))
        .getRows()
        .map((r) => String(r[0]));
      const byCode = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
      // Trailing blanks do not show in a terminal table; the escape does, as text.
      const shown = (st: string) => st.replace('\u001b', '\\u001b').trim();
      expect(header).toEqual(['destination', ...stored.sort(byCode).map(shown)]);
      for (const [i, status] of odd.entries()) {
        const [d] = (
          await c.runAndReadAll('SELECT destination FROM reports WHERE id = $id', { id: String(ids[i]![0]) })
        ).getRows()[0]!;
        const n = (
          await c.runAndReadAll(
            'SELECT count(*)::INTEGER FROM reports WHERE removed_at IS NULL AND destination = $d AND status = $s',
            { d: String(d), s: status },
          )
        ).getRows()[0]![0];
        const row = table
          .find((l) => l.trim().startsWith(`${String(d)} `))!
          .trim()
          .split(/\s{2,}/);
        expect(row[stored.sort(byCode).indexOf(status) + 1]).toBe(String(n));
      }
      expect(text).not.toContain('\u001b');
    });
  });
});

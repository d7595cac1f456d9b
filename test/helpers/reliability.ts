import { expect } from 'vitest';
import type { DuckDBConnection } from '@duckdb/node-api';
import { contentHash, type Report } from '../../src/schema/wire-format.js';
import type { Dataset } from '../../src/simulator/dataset.js';
import type { Warehouse } from '../../src/warehouse/database.js';
import { query } from './sync.js';

type Db = Warehouse | DuckDBConnection;

/** The reports the upstream's database holds now (what a complete sync must leave in `reports`), by id. */
export function expectedReports(dataset: Dataset): Report[] {
  return [...dataset.snapshot().published()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * Asserts that `reports` holds exactly `expected`: the same ids, the text fields byte for byte (compared
 * as strings, not through a hash) and the same content hash (which covers timestamps, coordinates and
 * `extra`).
 */
export async function expectWarehouseHolds(db: Db, expected: readonly Report[]): Promise<void> {
  const rows = await query(
    db,
    `SELECT id, status, destination, category, description, address, content_hash
     FROM reports WHERE removed_at IS NULL ORDER BY id`,
  );
  expect(rows.map((r) => r.id)).toEqual(expected.map((r) => r.id));
  const want = expected.map((r) => ({
    id: r.id,
    status: r.status,
    destination: r.destination,
    category: r.category,
    description: r.description,
    address: r.address,
    content_hash: contentHash(r),
  }));
  expect(rows).toEqual(want);
}

/** The `sync_runs` row of a run, BIGINTs as numbers, `error` parsed. */
export async function runRow(db: Db, runId: string): Promise<Record<string, unknown>> {
  const [row] = await query(db, `SELECT *, error::VARCHAR AS error FROM sync_runs WHERE run_id = $run`, {
    run: runId,
  });
  expect(row, `sync_runs row of ${runId}`).toBeDefined();
  return { ...row, error: row?.error === null ? null : JSON.parse(String(row?.error)) };
}

/**
 * Asserts the accounting of one finished run in the warehouse: loaded + rejected = read in `sync_runs`,
 * one `rejected_records` row per rejected record, and no staging or checkpoint rows left behind.
 * Returns the run row.
 */
export async function expectRunAccounted(db: Db, runId: string): Promise<Record<string, unknown>> {
  const row = await runRow(db, runId);
  expect(row.status).not.toBe('running');
  expect(Number(row.records_loaded) + Number(row.records_rejected)).toBe(Number(row.records_read));
  const [counts] = await query(
    db,
    `SELECT (SELECT count(*) FROM rejected_records WHERE run_id = $run) AS rejects,
            (SELECT count(*) FROM staging_reports WHERE run_id = $run) AS staged,
            (SELECT count(*) FROM sync_checkpoints WHERE run_id = $run) AS checkpoints`,
    { run: runId },
  );
  expect(counts).toEqual({ rejects: Number(row.records_rejected), staged: 0, checkpoints: 0 });
  return row;
}

/**
 * What two warehouses must agree on to be "the same warehouse": every current report with its business
 * columns and content hash, and every SCD2 version (change kind, status, hash, current or not). Times of
 * the sync itself (`first_seen_at`, `valid_from`, …) and run ids naturally differ and are left out.
 */
export async function warehouseFingerprint(db: Db): Promise<unknown> {
  const reports = await query(
    db,
    `SELECT id, status, destination, category, description, lat, lng, address,
            created_at::VARCHAR AS created_at, updated_at::VARCHAR AS updated_at, extra::VARCHAR AS extra,
            content_hash, removed_at IS NULL AS current
     FROM reports ORDER BY id`,
  );
  const versions = await query(
    db,
    `SELECT id, change, status, content_hash, valid_to IS NULL AS current
     FROM report_versions ORDER BY id, valid_from, change`,
  );
  return { reports, versions };
}

/** Every text cell of every row of `table`, joined: for "this secret appears nowhere in the table". */
export async function tableText(db: Db, table: string): Promise<string> {
  const rows = await query(db, `SELECT * FROM ${table}`);
  return rows
    .map((r) => JSON.stringify(r, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v)))
    .join('\n');
}

/** Polls `condition` every 20 ms until it holds; rejects after `timeoutMs` (generous: shared 2-core machines). */
export async function waitUntil(condition: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

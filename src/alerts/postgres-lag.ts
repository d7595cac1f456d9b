import type { DuckDBConnection } from '@duckdb/node-api';
import { readPublishRecord, type PublishRecord } from '../warehouse/postgres/publish-record.js';
import { CHANGING_RUN } from './snapshot-lag.js';
import type { PublishLag, PublishTargetLag } from './watch-rules.js';

/** How far PostgreSQL is behind the warehouse, and how the last publish went. */
export interface PostgresLag extends PublishLag {
  /** Finished runs of the run log after the run PostgreSQL holds last (every run if none). */
  runsBehind: number;
  /** The last attempt's error, null when it succeeded or none was tried. */
  lastError: string | null;
  /** When a publish was last tried. */
  lastAttemptAt: Date | null;
  /** The run PostgreSQL holds last, null before the first publish. */
  lastRunId: string | null;
}

/**
 * Reads the PostgreSQL publish lag from the warehouse's run log and the publish record
 * (warehouse/postgres/publish-record.ts): runs finished after the last run applied, and the time since the
 * first of them that changed what a publish copies ({@link CHANGING_RUN}; 0 when there is none).
 */
export async function readPostgresLag(
  c: DuckDBConnection,
  record: PublishRecord | undefined,
  nowMs: number,
  neverPublishedSinceMs?: number,
): Promise<PostgresLag> {
  const lastRunId = record?.lastRunId ?? null;
  const [row] = (
    await c.runAndReadAll(
      `SELECT count(*)::DOUBLE AS runs,
         epoch_ms(min(finished_at) FILTER (WHERE ${CHANGING_RUN}))::DOUBLE AS first
       FROM sync_runs
       WHERE finished_at IS NOT NULL
         AND started_at > coalesce((SELECT max(started_at) FROM sync_runs WHERE run_id = $last), '-infinity'::TIMESTAMPTZ)`,
      { last: lastRunId ?? '' },
    )
  ).getRowObjectsJS();
  let first = row?.first === null || row?.first === undefined ? null : new Date(Number(row.first));
  // Never published: PostgreSQL was just configured. Its lag counts from then (the daemon's start), as a
  // job that never succeeded counts its freshness, not from changes made before it was a target.
  if (first !== null && record === undefined && neverPublishedSinceMs !== undefined) {
    first = new Date(Math.max(first.getTime(), neverPublishedSinceMs));
  }
  const date = (iso: string | null | undefined) => (iso ? new Date(iso) : null);
  return {
    lagMs: first === null ? 0 : Math.max(0, nowMs - first.getTime()),
    publishedAt: date(record?.lastSuccessAt),
    pendingSince: first,
    runsBehind: Number(row?.runs ?? 0),
    lastError: record?.lastError ?? null,
    lastAttemptAt: date(record?.lastAttemptAt),
    lastRunId,
  };
}

/** The PostgreSQL publish as a target of the daemon's watchdog (`publish.lagging`, the lag gauges). */
export function postgresLag(
  warehousePath: string,
  connect: () => Promise<DuckDBConnection>,
  options: { release?: (c: DuckDBConnection) => void; neverPublishedSinceMs?: number } = {},
): PublishTargetLag {
  const release = options.release ?? ((c: DuckDBConnection) => c.closeSync());
  return {
    target: 'postgres',
    async lag(nowMs: number): Promise<PostgresLag> {
      const c = await connect();
      try {
        const record = readPublishRecord(warehousePath);
        return await readPostgresLag(c, record, nowMs, options.neverPublishedSinceMs);
      } finally {
        release(c);
      }
    },
  };
}

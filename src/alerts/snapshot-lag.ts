import { statSync } from 'node:fs';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { PublishLag, PublishTargetLag } from './watch-rules.js';

/**
 * Runs whose commit changes what a publish must copy: one that changed reports, a stats snapshot (new
 * rows), a full refresh (`reports-sync reset`). Daemon publishes follow the same rule (publish-policy.ts).
 */
export const CHANGING_RUN = `status = 'succeeded' AND (outcome = 'changed' OR refined > 0 OR source IN ('stats', 'reset'))`;

/**
 * The lag of the published snapshot (`<published>/warehouse.duckdb` and its Parquet set, written together
 * by warehouse/publish.ts), read from the files: the copy's mtime against the first changing run that
 * finished after it.
 *
 * @param dir the published folder
 * @param connect a connection to the live warehouse (closed by the caller's pool or here after use)
 */
export function snapshotLag(
  dir: string,
  connect: () => Promise<DuckDBConnection>,
  release: (c: DuckDBConnection) => void = (c) => c.closeSync(),
): PublishTargetLag {
  return {
    target: 'snapshot',
    async lag(nowMs: number): Promise<PublishLag | undefined> {
      const publishedAt = mtime(join(dir, 'warehouse.duckdb'));
      const c = await connect();
      try {
        const [row] = (
          await c.runAndReadAll(
            `SELECT epoch_ms(min(finished_at))::DOUBLE AS first FROM sync_runs
             WHERE ${CHANGING_RUN} AND finished_at > $after::TIMESTAMPTZ`,
            { after: (publishedAt ?? new Date(0)).toISOString() },
          )
        ).getRowObjectsJS();
        const first = row?.first === null || row?.first === undefined ? null : new Date(Number(row.first));
        if (first === null && publishedAt === null) return undefined;
        return {
          lagMs: first === null ? 0 : Math.max(0, nowMs - first.getTime()),
          publishedAt,
          pendingSince: first,
        };
      } finally {
        release(c);
      }
    },
  };
}

function mtime(path: string): Date | null {
  try {
    return statSync(path).mtime;
  } catch {
    return null;
  }
}

import type { DuckDBConnection } from '@duckdb/node-api';
import { CHANGED_REPORTS_SQL } from '../warehouse/runs.js';

/** A successful run of the run log. */
export interface LastSuccess {
  runId: string;
  job: string;
  /** When the run committed, epoch ms. */
  finishedMs: number;
}

/** The two runs the reader keys on: what it serves, and how recent the warehouse is. */
export interface RunState {
  /**
   * The last successful run that changed `reports` (inserted, updated, removed, revived or refined a report), or
   * `null` when none did: the data state every answer is a function of, so the validators (`ETag`,
   * `Last-Modified`) come from it and a stats-only or no-change run leaves every client cache valid.
   */
  changed: LastSuccess | null;
  /** The last successful run of any job (`/healthz`), or `null` before the first one. */
  latest: LastSuccess | null;
  /**
   * Changes whenever the run log does (a run starts, ends in any status, or is marked aborted): what the
   * status page's figures are kept by, so a failed run shows at once.
   */
  logKey: string;
  /**
   * The serving index's version in the same snapshot (`reader_serving.version`, null when none): a list
   * page's rows carry the version they were read at, so a page is labelled with validators of its own state.
   */
  servingVersion: bigint | null;
}

/**
 * Reads {@link RunState} from `sync_runs` (docs/how-a-sync-works.md, the run log) in one scan. Every change of the
 * `reports` table commits together with its run row and that row's counts, so `changed` identifies the
 * data state the reader serves.
 */
export async function readRunState(connection: DuckDBConnection): Promise<RunState> {
  // arg_max over one scan is about twice as fast as ORDER BY … LIMIT 1; it runs once per export request.
  const reader = await connection.runAndReadAll(
    `SELECT
       arg_max([run_id, job, epoch_ms(finished_at)::VARCHAR], (finished_at, run_id))
         FILTER (WHERE ${CHANGED_REPORTS_SQL}),
       arg_max([run_id, job, epoch_ms(finished_at)::VARCHAR], (finished_at, run_id)) FILTER (WHERE ${SUCCEEDED}),
       concat_ws('/', count(*), count(finished_at), max(finished_at), count(*) FILTER (WHERE status = 'running')),
       (SELECT max(version) FROM reader_serving WHERE bucket_us IS NOT NULL)
     FROM sync_runs`,
  );
  const row = reader.getRowsJS()[0] ?? [];
  const version = row[3];
  return {
    changed: runOf(row[0]),
    latest: runOf(row[1]),
    logKey: String(row[2] ?? ''),
    servingVersion: typeof version === 'bigint' ? version : null,
  };
}

const SUCCEEDED = `status = 'succeeded' AND finished_at IS NOT NULL`;

function runOf(value: unknown): LastSuccess | null {
  if (!Array.isArray(value)) return null;
  return { runId: String(value[0]), job: String(value[1]), finishedMs: Number(value[2]) };
}

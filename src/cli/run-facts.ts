import type { DuckDBConnection } from '@duckdb/node-api';

/** What a run recorded beside its counters (`sync_runs`), as the summary and `sync --json` show it. */
export interface RunFacts {
  /** The interrupted run whose pages 1 to `atPage - 1` this run adopted (a resumed CSV export). */
  resumed?: { fromRun: string; atPage: number };
  /** The tombstone decision: how many reports left the upstream, or why none were inferred. */
  tombstones?: string;
  /** The upstream's `/stats` total beside the warehouse's, and their difference (upstream − warehouse). */
  stats?: { upstreamTotal: number | null; warehouseTotal: number; difference: number | null };
}

/** The {@link RunFacts} of run `runId` (only what it recorded; empty for an unknown run). */
export async function readRunFacts(connection: DuckDBConnection, runId: string): Promise<RunFacts> {
  const [row] = (
    await connection.runAndReadAll(
      `SELECT resumed_from_run, resumed_at_page, tombstones_note, stats_total_upstream::DOUBLE AS up,
              stats_total_warehouse::DOUBLE AS wh, stats_total_diff::DOUBLE AS diff
       FROM sync_runs WHERE run_id = $run`,
      { run: runId },
    )
  ).getRowObjectsJS();
  if (!row) return {};
  const facts: RunFacts = {};
  if (row.resumed_from_run !== null) {
    facts.resumed = { fromRun: String(row.resumed_from_run), atPage: Number(row.resumed_at_page) };
  }
  if (row.tombstones_note !== null) facts.tombstones = String(row.tombstones_note);
  if (row.wh !== null) {
    facts.stats = {
      upstreamTotal: row.up === null ? null : Number(row.up),
      warehouseTotal: Number(row.wh),
      difference: row.diff === null ? null : Number(row.diff),
    };
  }
  return facts;
}

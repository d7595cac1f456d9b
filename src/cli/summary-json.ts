import type { DuckDBConnection } from '@duckdb/node-api';
import type { RunSummary } from '../sync/run-sync.js';
import { runQualityFlags } from '../warehouse/quality-flags.js';

/** One run of `sync --json`: the summary's figures, the error if any, and its rejects grouped by reason. */
export interface RunJson {
  runId: string;
  source: string;
  status: RunSummary['status'];
  durationMs: number;
  attempts: number;
  counters: RunSummary['counters'];
  error?: Record<string, unknown> | undefined;
  /** Why a succeeded run stopped before the end of its export (absent when it read it all). */
  incompleteReason?: string | undefined;
  rejectsByReason: { reason: string; records: number }[];
  /** Versions the run wrote with impossible values (loaded and flagged), by data-quality rule. */
  qualityFlags: { rule: string; reports: number }[];
}

/** The document `sync --json` prints: every run, then the warehouse's current reports. */
export interface SyncJson {
  runs: RunJson[];
  warehouse: { currentReports: number; byDestinationAndStatus: Record<string, unknown>[] };
}

/**
 * The runs of a one-shot sync as one JSON document for scripts and CI (`reports-sync sync --json`): the same
 * facts the text summary prints. Numbers are JSON numbers (counts fit in a double).
 */
export async function runSummariesJson(
  connection: DuckDBConnection,
  summaries: RunSummary[],
): Promise<SyncJson> {
  const runs: RunJson[] = [];
  for (const s of summaries) {
    const reasons = (
      await connection.runAndReadAll(
        `SELECT coalesce(nullif(issues->>'$[0].path', ''), '(record)') || ': ' || (issues->>'$[0].message') AS reason,
                count(*)::DOUBLE AS records
         FROM rejected_records WHERE run_id = $run GROUP BY ALL ORDER BY records DESC, reason`,
        { run: s.runId },
      )
    ).getRowObjectsJS();
    runs.push({
      runId: s.runId,
      source: s.source,
      status: s.status,
      durationMs: s.durationMs,
      attempts: s.attempts,
      counters: s.counters,
      error: s.error?.toJSON(),
      incompleteReason: s.incompleteReason,
      rejectsByReason: reasons.map((r) => ({ reason: String(r.reason), records: Number(r.records) })),
      qualityFlags: await runQualityFlags(connection, s.runId),
    });
  }
  const byDestinationAndStatus = (
    await connection.runAndReadAll(
      `SELECT destination, status, count(*)::DOUBLE AS reports FROM reports WHERE removed_at IS NULL
       GROUP BY ALL ORDER BY destination, status`,
    )
  ).getRowObjectsJS();
  const currentReports = byDestinationAndStatus.reduce((sum, r) => sum + Number(r.reports), 0);
  return { runs, warehouse: { currentReports, byDestinationAndStatus } };
}

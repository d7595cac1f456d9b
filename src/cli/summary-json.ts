import type { DuckDBConnection } from '@duckdb/node-api';
import { describe as describeDrift } from '../sync/drift-hooks.js';
import type { RunSummary } from '../sync/run-sync.js';
import type { DriftEvent } from '../warehouse/drift.js';
import { currentCountsRelation } from '../warehouse/current-counts.js';
import { runQualityFlags } from '../warehouse/quality-flags.js';
import { rejectReasons } from '../warehouse/reject-reasons.js';
import { readRunFacts, type RunFacts } from './run-facts.js';

/** One run of `sync --json`: the summary's figures, the error if any, and its rejects grouped by reason. */
export interface RunJson extends RunFacts {
  runId: string;
  source: string;
  status: RunSummary['status'];
  durationMs: number;
  attempts: number;
  /**
   * The run's counters. `recordsLoaded` counts records merged into the warehouse: 0 for a run that did not
   * succeed (it merged nothing), whose valid records were only staged (`recordsStaged`).
   */
  counters: RunSummary['counters'] & { recordsStaged: number };
  error?: Record<string, unknown> | undefined;
  /** Why a succeeded run stopped before the end of its export (absent when it read it all). */
  incompleteReason?: string | undefined;
  /** The full export answered 304 Not Modified: nothing read or merged, every current report seen. */
  notModified: boolean;
  /** Schema drift the run saw (a new value, field or type), each with its sentence. */
  drift: (DriftEvent & { description: string })[];
  /**
   * Rejects grouped by the field (`path`) and issue `code` of each record's first issue
   * (warehouse/reject-reasons.ts): `reason` is `path: message` with the group's most frequent message.
   */
  /** Grouped by each record's first issue; `alsoIssues`: the group's later issues, by path and code. */
  rejectsByReason: {
    reason: string;
    path: string;
    code: string;
    message: string;
    records: number;
    alsoIssues: { path: string; code: string; records: number }[];
  }[];
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
 * facts the text summary prints (print-summary.ts). Numbers are JSON numbers (counts fit in a double).
 */
export async function runSummariesJson(
  connection: DuckDBConnection,
  summaries: RunSummary[],
): Promise<SyncJson> {
  const runs: RunJson[] = [];
  for (const s of summaries) {
    const reasons = await rejectReasons(connection, { runId: s.runId });
    const merged = s.status === 'succeeded';
    runs.push({
      runId: s.runId,
      source: s.source,
      status: s.status,
      durationMs: s.durationMs,
      attempts: s.attempts,
      counters: {
        ...s.counters,
        recordsLoaded: merged ? s.counters.recordsLoaded : 0,
        recordsStaged: s.counters.recordsLoaded,
      },
      error: s.error?.toJSON(),
      incompleteReason: s.incompleteReason,
      notModified: s.notModified === true,
      drift: (s.drift ?? []).map((d) => ({ ...d, description: describeDrift(d) })),
      ...(await readRunFacts(connection, s.runId)),
      rejectsByReason: reasons.map((r) => ({
        reason: r.reason,
        path: r.path,
        code: r.code,
        message: r.message,
        records: r.records,
        alsoIssues: r.alsoIssues,
      })),
      qualityFlags: await runQualityFlags(connection, s.runId),
    });
  }
  const byDestinationAndStatus = (
    await connection.runAndReadAll(
      `SELECT destination, status, reports FROM (${await currentCountsRelation(connection)})
       ORDER BY destination, status`,
    )
  ).getRowObjectsJS();
  const currentReports = byDestinationAndStatus.reduce((sum, r) => sum + Number(r.reports), 0);
  return { runs, warehouse: { currentReports, byDestinationAndStatus } };
}

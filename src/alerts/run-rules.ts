import type { DuckDBConnection, DuckDBValue } from '@duckdb/node-api';
import { describe as describeDrift } from '../sync/drift-hooks.js';
import type { DriftEvent, DriftKind } from '../warehouse/drift.js';
import { runQualityFlags } from '../warehouse/quality-flags.js';
import type { AlertDraft, Condition } from './alert-event.js';

type Row = Record<string, unknown>;

async function rows(
  c: DuckDBConnection,
  sql: string,
  params: Record<string, DuckDBValue> = {},
): Promise<Row[]> {
  return (await c.runAndReadAll(sql, params)).getRowObjectsJS();
}

const n = (v: unknown) => (v === null || v === undefined ? 0 : Number(v));
const count = (v: number) => v.toLocaleString('en');

/**
 * The run incident of a job (`run:<job>`): active while its last run that ended failed or succeeded
 * failed. A run a dead process left (`RUN_INTERRUPTED`: an out-of-memory kill, a SIGKILL) counts as failed,
 * as in the `reports_sync_last_run_success` gauge; a run aborted by a signal or a shutdown says nothing
 * about the upstream and is passed over. Opens with
 * `run.failed` (error code and message), resolves with `run.recovered` (the failures it ends). Undefined
 * when the job has no such run.
 */
export async function runCondition(c: DuckDBConnection, job: string): Promise<Condition | undefined> {
  const ended = await rows(
    c,
    `SELECT run_id, CASE WHEN status = 'aborted' THEN 'failed' ELSE status END AS status,
            error->>'code' AS code, error->>'message' AS message, epoch_ms(finished_at)::DOUBLE AS finished
     FROM sync_runs
     WHERE job = $job AND finished_at IS NOT NULL
       AND (status IN ('succeeded', 'failed')
            OR (status = 'aborted' AND json_extract_string(error, '$.code') = 'RUN_INTERRUPTED'))
     ORDER BY finished_at DESC, run_id DESC LIMIT 1000`,
    { job },
  );
  const last = ended[0];
  if (!last) return undefined;
  const streak = ended.findIndex((r) => r.status !== 'failed');
  const failures = streak === -1 ? ended.length : streak;
  const lastFailure = ended.find((r) => r.status === 'failed');
  // A success ends the failures just before it.
  const before = ended.slice(1).findIndex((r) => r.status !== 'failed');
  const failedBefore = before === -1 ? ended.length - 1 : before;
  const runId = String(last.run_id);
  const code = String(lastFailure?.code ?? 'RUN_FAILED');
  const message = String(lastFailure?.message ?? '');
  return {
    incident: `run:${job}`,
    active: last.status === 'failed',
    open: {
      type: 'run.failed',
      job,
      runId,
      summary: `${job} failed: ${code}: ${message}`,
      figures: { code, message, consecutiveFailures: failures, finishedAt: iso(last.finished) },
    },
    resolve: {
      type: 'run.recovered',
      job,
      runId,
      summary: `${job} succeeded again after ${failedBefore} failed run${failedBefore === 1 ? '' : 's'}`,
      figures: { failedRuns: failedBefore, finishedAt: iso(last.finished) },
    },
  };
}

/** The opposite drift of a kind: a field that went and came back is news again. */
const OPPOSITE: Record<DriftKind, string> = {
  new_value: '',
  new_field: 'field_gone',
  type_changed: 'field_gone',
  field_gone: 'new_field',
};

/**
 * The `drift.detected` notice of a run (`drift:<run>`): its drift events (warehouse/drift.ts) seen for the
 * first time. The catalog tells each drift once under `evolve`; under `freeze` every run fails on the same
 * drift and records it again, so a drift an earlier run recorded (and that was not undone since: a field
 * gone and back) is left out. Undefined when nothing is new.
 */
export async function driftNotice(
  c: DuckDBConnection,
  run: { runId: string; job: string },
): Promise<AlertDraft | undefined> {
  const fresh = await rows(
    c,
    `SELECT e.kind, e.field, e.value, e.count FROM drift_events e
     WHERE e.run_id = $run AND NOT EXISTS (
       SELECT 1 FROM drift_events p
       WHERE p.run_id <> $run AND p.kind = e.kind AND p.field = e.field AND p.value IS NOT DISTINCT FROM e.value
         AND p.first_seen <= e.first_seen
         AND NOT EXISTS (
           SELECT 1 FROM drift_events g
           WHERE g.field = e.field AND g.kind = (CASE e.kind ${Object.entries(OPPOSITE)
             .map(([k, o]) => `WHEN '${k}' THEN '${o}'`)
             .join(' ')} END)
             AND g.first_seen > p.first_seen AND g.first_seen <= e.first_seen))
     ORDER BY e.kind, e.field, e.value`,
    { run: run.runId },
  );
  if (fresh.length === 0) return undefined;
  const events: DriftEvent[] = fresh.map((r) => ({
    kind: String(r.kind) as DriftKind,
    field: String(r.field),
    value: r.value === null ? null : String(r.value),
    count: n(r.count),
  }));
  const shown = events.slice(0, 5).map(describeDrift).join('; ');
  const more = events.length > 5 ? `; and ${events.length - 5} more` : '';
  return {
    type: 'drift.detected',
    incident: `drift:${run.runId}`,
    job: run.job,
    runId: run.runId,
    summary: `${run.job}: the upstream schema drifted: ${shown}${more}`,
    figures: { events: events.length, drift: events.slice(0, 50) },
  };
}

/**
 * The `quality.flagged` notice of a succeeded run (`quality:<run>`) that flagged at least `threshold`
 * impossible values (docs/guarantees.md, "Data quality"), with its flags by rule. Undefined below it, or
 * with `threshold` 0 (off).
 */
export async function qualityNotice(
  c: DuckDBConnection,
  run: { runId: string; job: string },
  threshold: number,
): Promise<AlertDraft | undefined> {
  if (threshold <= 0) return undefined;
  const [r] = await rows(
    c,
    `SELECT quality_flags FROM sync_runs WHERE run_id = $run AND status = 'succeeded'`,
    { run: run.runId },
  );
  const flags = n(r?.quality_flags);
  if (flags < threshold) return undefined;
  const byRule = await runQualityFlags(c, run.runId);
  const text = byRule.map((b) => `${b.rule} ${count(b.reports)}`).join(', ');
  return {
    type: 'quality.flagged',
    incident: `quality:${run.runId}`,
    job: run.job,
    runId: run.runId,
    summary: `${run.job}: ${count(flags)} impossible value${flags === 1 ? '' : 's'} loaded and flagged (${text})`,
    figures: { qualityFlags: flags, threshold, byRule },
  };
}

/**
 * The reconciliation incident (`reconciliation`): the upstream `/stats` total and the warehouse's, as the
 * last `snapshots` comparisons of succeeded runs recorded them (`sync_runs.stats_total_*`). Active when
 * each of them differs by more than `threshold` reports; clear when the latest is within it; no change
 * otherwise (one noisy reading neither opens nor closes it).
 */
export async function reconciliationCondition(
  c: DuckDBConnection,
  options: { threshold: number; snapshots: number },
): Promise<Condition | undefined> {
  const last = await rows(
    c,
    `SELECT run_id, job, stats_total_upstream AS up, stats_total_warehouse AS wh, stats_total_diff AS diff,
            epoch_ms(finished_at)::DOUBLE AS finished
     FROM sync_runs WHERE status = 'succeeded' AND stats_total_diff IS NOT NULL AND finished_at IS NOT NULL
     ORDER BY finished_at DESC, run_id DESC LIMIT $k`,
    { k: Math.max(1, options.snapshots) },
  );
  const latest = last[0];
  if (!latest) return undefined;
  const over = (r: Row) => Math.abs(n(r.diff)) > options.threshold;
  const active =
    last.length >= options.snapshots && last.every(over) ? true : over(latest) ? undefined : false;
  const figures = {
    upstreamTotal: n(latest.up),
    warehouseTotal: n(latest.wh),
    difference: n(latest.diff),
    threshold: options.threshold,
    snapshots: last.length,
    comparedAt: iso(latest.finished),
  };
  const base = { job: String(latest.job), runId: String(latest.run_id), figures };
  return {
    incident: 'reconciliation',
    active,
    open: {
      ...base,
      type: 'reconciliation.gap',
      summary:
        `the upstream /stats total (${count(n(latest.up))}) and the warehouse (${count(n(latest.wh))}) differ by ` +
        `${count(n(latest.diff))}, more than ${count(options.threshold)}, in each of the last ${last.length} comparisons`,
    },
    resolve: {
      ...base,
      type: 'reconciliation.resolved',
      summary:
        `the upstream /stats total (${count(n(latest.up))}) and the warehouse (${count(n(latest.wh))}) agree ` +
        `again (difference ${count(n(latest.diff))}, threshold ${count(options.threshold)})`,
    },
  };
}

function iso(ms: unknown): string | null {
  return ms === null || ms === undefined ? null : new Date(Number(ms)).toISOString();
}

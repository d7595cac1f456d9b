import type { Writable } from 'node:stream';
import type { DuckDBConnection } from '@duckdb/node-api';
import { describe as describeDrift } from '../sync/drift-hooks.js';
import type { RunSummary } from '../sync/run-sync.js';
import { runQualityFlags } from '../warehouse/quality-flags.js';
import { formatTable } from './format-table.js';

/**
 * Prints a readable account of runs to `out`: outcome, records read/loaded/rejected, inserted/updated/
 * unchanged, duration and records/s, reject reasons, then the warehouse's current reports by destination
 * and status.
 */
export async function printRunSummaries(
  connection: DuckDBConnection,
  summaries: RunSummary[],
  out: Writable,
): Promise<void> {
  for (const s of summaries) {
    const c = s.counters;
    const seconds = s.durationMs / 1000;
    const rate = seconds > 0 ? Math.round(c.recordsRead / seconds) : c.recordsRead;
    out.write(`\nRun ${s.runId} (${s.source}): ${s.status.toUpperCase()} in ${seconds.toFixed(2)} s`);
    out.write(s.attempts > 1 ? ` after ${s.attempts} attempts\n` : '\n');
    if (s.error) out.write(`  error: ${s.error.message}\n`);
    if (s.incompleteReason) out.write(`  incomplete: ${s.incompleteReason} (no tombstones inferred)\n`);
    if (s.notModified)
      out.write('  export not modified (304): nothing read or merged, every current report seen\n');
    for (const d of s.drift ?? []) out.write(`  schema drift: ${describeDrift(d)}\n`);
    // A stats snapshot run reads no records: only its /stats line says something.
    if (s.source !== 'stats') {
      out.write(
        `  records: ${c.recordsRead} read, ${c.recordsLoaded} loaded, ${c.recordsRejected} rejected` +
          ` (${rate.toLocaleString('en-US')} records/s, ${(c.bytesRead / 1024 / 1024).toFixed(1)} MiB)\n`,
      );
      if (s.status === 'succeeded') {
        out.write(
          `  merge:   ${c.inserted} inserted, ${c.updated} updated, ${c.unchanged} unchanged, ` +
            `${c.revived} revived, ${c.removed} removed, ${c.duplicates} duplicates superseded` +
            `${c.refined > 0 ? `, ${c.refined} refined from their CSV form` : ''}\n`,
        );
      }
      const flags = await runQualityFlags(connection, s.runId);
      if (flags.length > 0) {
        const list = flags.map((f) => `${f.rule} ${f.reports}`).join(', ');
        out.write(
          `  data quality: ${c.qualityFlags} impossible values loaded and flagged, reports by rule: ${list} (see data_quality_flags)\n`,
        );
      }
    }
    await printRunFacts(connection, s.runId, out);
    const reasons = (
      await connection.runAndReadAll(
        `SELECT coalesce(nullif(issues->>'$[0].path', ''), '(record)') || ': ' || (issues->>'$[0].message') AS reason,
                count(*) AS records, string_agg(location, '; ' ORDER BY page, line) AS "where"
         FROM rejected_records WHERE run_id = $run GROUP BY ALL ORDER BY records DESC, reason`,
        { run: s.runId },
      )
    ).getRowObjectsJson();
    if (reasons.length > 0) {
      out.write('  rejected records (quarantined in rejected_records):\n');
      out.write(
        indent(
          formatTable(
            reasons.map((r) => ({ ...r, where: clip(String(r.where), 60) })),
            { rightAlign: new Set(['records']) },
          ),
          4,
        ),
      );
    }
  }
  const byDestination = (
    await connection.runAndReadAll(
      `PIVOT (SELECT destination, status FROM reports WHERE removed_at IS NULL)
       ON status USING count(*) GROUP BY destination ORDER BY destination`,
    )
  ).getRowObjectsJson();
  const total = (
    await connection.runAndReadAll(`SELECT count(*) AS n FROM reports WHERE removed_at IS NULL`)
  ).getRowObjectsJson()[0]?.n;
  out.write(`\nWarehouse: ${String(total)} current reports, by destination and status:\n`);
  // Every column but the destination is a count.
  const counts = new Set(Object.keys(byDestination[0] ?? {}).filter((c) => c !== 'destination'));
  out.write(indent(formatTable(byDestination, { rightAlign: counts }), 2));
}

/** Resume, tombstone and stats lines of a run, from `sync_runs` (only the facts the run recorded). */
async function printRunFacts(connection: DuckDBConnection, runId: string, out: Writable): Promise<void> {
  const [facts] = (
    await connection.runAndReadAll(
      `SELECT resumed_from_run, resumed_at_page, tombstones_note, stats_total_upstream, stats_total_warehouse,
              stats_total_diff
       FROM sync_runs WHERE run_id = $run`,
      { run: runId },
    )
  ).getRowObjectsJS();
  if (!facts) return;
  if (facts.resumed_from_run !== null) {
    out.write(
      `  resumed: pages 1–${Number(facts.resumed_at_page) - 1} adopted from interrupted run ${String(facts.resumed_from_run)}\n`,
    );
  }
  if (facts.tombstones_note !== null) out.write(`  tombstones: ${String(facts.tombstones_note)}\n`);
  if (facts.stats_total_warehouse !== null) {
    const upstream = facts.stats_total_upstream === null ? 'unknown' : String(facts.stats_total_upstream);
    const diff = facts.stats_total_diff === null ? '' : ` (difference ${String(facts.stats_total_diff)})`;
    out.write(
      `  /stats:  upstream total ${upstream}, warehouse ${String(facts.stats_total_warehouse)}${diff}\n`,
    );
  }
}

function indent(text: string, n: number): string {
  const pad = ' '.repeat(n);
  return text
    .split('\n')
    .map((l) => (l ? pad + l : l))
    .join('\n');
}

function clip(text: string, n: number): string {
  return text.length > n ? `${text.slice(0, n - 1)}…` : text;
}

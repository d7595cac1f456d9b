import type { Writable } from 'node:stream';
import type { DuckDBConnection } from '@duckdb/node-api';
import { describe as describeDrift } from '../sync/drift-hooks.js';
import type { RunSummary } from '../sync/run-sync.js';
import { wrapToWidth } from '../util/screen.js';
import { currentCountsRelation } from '../warehouse/current-counts.js';
import { runQualityFlags } from '../warehouse/quality-flags.js';
import { alsoIssuesText, rejectReasons, type RejectReason } from '../warehouse/reject-reasons.js';
import { formatGrid, formatTable } from './format-table.js';
import { readRunFacts, type RunFacts } from './run-facts.js';

/** Numbers as people read them, the same in the progress line and the summary: `300,000`. */
export const count = (n: number): string => n.toLocaleString('en-US');

/**
 * Prints a readable account of runs to `out`: outcome, records read/loaded/rejected, inserted/updated/
 * unchanged, duration and records/s, the tombstone decision and the `/stats` difference, reject reasons
 * grouped by field and issue code (warehouse/reject-reasons.ts), then the warehouse's current reports by
 * destination and status. A run that did not succeed merged nothing: its valid records are shown as
 * staged, never as loaded.
 *
 * @param width the terminal's width in columns: lines wrap and tables fit in it; undefined (not a
 *   terminal): lines and values whole
 */
export async function printRunSummaries(
  connection: DuckDBConnection,
  summaries: RunSummary[],
  out: Writable,
  width?: number,
): Promise<void> {
  const write = (text: string) => out.write(wrapToWidth(text, width));
  for (const s of summaries) {
    const c = s.counters;
    const seconds = s.durationMs / 1000;
    const rate = seconds > 0 ? Math.round(c.recordsRead / seconds) : c.recordsRead;
    write(
      `\nRun ${s.runId} (${s.source}): ${s.status.toUpperCase()} in ${seconds.toFixed(2)} s` +
        (s.attempts > 1 ? ` after ${s.attempts} attempts\n` : '\n'),
    );
    if (s.error) write(`  ${s.status === 'aborted' ? 'stopped' : 'error'}: ${s.error.message}\n`);
    if (s.incompleteReason) write(`  incomplete: ${s.incompleteReason} (no tombstones inferred)\n`);
    if (s.notModified)
      write('  export not modified (304): nothing read or merged, every current report seen\n');
    for (const d of s.drift ?? []) write(`  schema drift: ${describeDrift(d)}\n`);
    // A stats snapshot run reads no records: only its /stats line says something.
    if (s.source !== 'stats') {
      const valid =
        s.status === 'succeeded'
          ? `${count(c.recordsLoaded)} loaded`
          : `${count(c.recordsLoaded)} valid (staged, not merged: the run ${s.status === 'aborted' ? 'was aborted' : 'failed'})`;
      write(
        `  records: ${count(c.recordsRead)} read, ${valid}, ${count(c.recordsRejected)} rejected` +
          ` (${count(rate)} records/s, ${(c.bytesRead / 1024 / 1024).toFixed(1)} MiB)\n`,
      );
      if (s.status === 'succeeded') {
        write(
          `  merge:   ${count(c.inserted)} inserted, ${count(c.updated)} updated, ${count(c.unchanged)} unchanged, ` +
            `${count(c.revived)} revived, ${count(c.removed)} removed, ${count(c.duplicates)} duplicates superseded` +
            `${c.refined > 0 ? `, ${count(c.refined)} refined from their CSV form` : ''}\n`,
        );
      }
      const flags = await runQualityFlags(connection, s.runId);
      if (flags.length > 0) {
        const list = flags.map((f) => `${f.rule} ${count(f.reports)}`).join(', ');
        write(
          `  data quality: ${count(c.qualityFlags)} impossible values loaded and flagged, reports by rule: ${list} (see data_quality_flags)\n`,
        );
      }
    }
    write(factLines(await readRunFacts(connection, s.runId)));
    const reasons = await rejectReasons(connection, { runId: s.runId });
    if (reasons.length > 0) {
      write('  rejected records (quarantined in rejected_records), by field and problem:\n');
      out.write(
        indent(
          formatTable(withoutEmptyColumn(reasons.map(reasonRow), 'also wrong'), {
            rightAlign: new Set(['records']),
            maxWidth: inner(width, 4),
          }),
          4,
        ),
      );
    }
  }
  const countsSql = await currentCountsRelation(connection);
  const cells = (
    await connection.runAndReadAll(
      `SELECT destination, status, sum(reports)::DOUBLE AS n FROM (${countsSql}) GROUP BY ALL`,
    )
  ).getRowsJS() as [string, string, number][];
  const total = cells.reduce((sum, [, , n]) => sum + n, 0);
  write(`\nWarehouse: ${count(total)} current reports, by destination and status:\n`);
  const { header, rows } = crossTab(cells);
  out.write(
    indent(
      formatGrid(header, rows, {
        rightAlignAt: new Set(header.map((_, i) => i).filter((i) => i > 0)),
        maxWidth: inner(width, 2),
      }),
      2,
    ),
  );
}

/**
 * Counts by (destination, status) as a table: one row per destination, one column per status, both sorted
 * by code unit, a missing pair counted 0. Built here rather than with DuckDB's `PIVOT`, whose column
 * names are case-insensitive (`Submitted` beside `SUBMITTED` came out renamed `Submitted_1`) and may clash
 * with `destination`; codes are open-ended upstream text (seed: "not shown"), so any may occur.
 */
function crossTab(cells: readonly [string, string, number][]): { header: string[]; rows: string[][] } {
  const byCode = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  const statuses = [...new Set(cells.map(([, status]) => status))].sort(byCode);
  const destinations = [...new Set(cells.map(([destination]) => destination))].sort(byCode);
  const n = new Map(cells.map(([d, st, k]) => [`${d}\u0000${st}`, k]));
  return {
    header: ['destination', ...statuses],
    rows: destinations.map((d) => [d, ...statuses.map((st) => count(n.get(`${d}\u0000${st}`) ?? 0))]),
  };
}

/** The resume, tombstone and `/stats` lines of a run (only the facts it recorded). */
function factLines(facts: RunFacts): string {
  const lines: string[] = [];
  if (facts.resumed) {
    lines.push(
      `  resumed: pages 1–${facts.resumed.atPage - 1} adopted from interrupted run ${facts.resumed.fromRun}\n`,
    );
  }
  if (facts.tombstones !== undefined) lines.push(`  tombstones: ${facts.tombstones}\n`);
  if (facts.stats) {
    const { upstreamTotal, warehouseTotal, difference } = facts.stats;
    const upstream = upstreamTotal === null ? 'unknown' : count(upstreamTotal);
    const diff = difference === null ? '' : ` (difference ${count(difference)})`;
    lines.push(`  /stats:  upstream total ${upstream}, warehouse ${count(warehouseTotal)}${diff}\n`);
  }
  return lines.join('');
}

/** A reject group as a table row: field, problem (issue code), records, an example message, where. */
function reasonRow(r: RejectReason): Record<string, unknown> {
  const more = r.records - r.locations.length;
  return {
    field: r.path === '' ? '(record)' : r.path,
    problem: r.code,
    records: count(r.records),
    example: r.message,
    where: r.locations.join('; ') + (more > 0 ? ` (+${count(more)} more)` : ''),
    'also wrong': alsoIssuesText(r.alsoIssues),
  };
}

/** `rows` without the column `key` when no row has a value there. */
function withoutEmptyColumn(rows: Record<string, unknown>[], key: string): Record<string, unknown>[] {
  if (rows.some((r) => r[key] !== '')) return rows;
  return rows.map(({ [key]: _dropped, ...rest }) => rest);
}

function inner(width: number | undefined, indentBy: number): number | undefined {
  return width === undefined ? undefined : Math.max(20, width - indentBy);
}

function indent(text: string, n: number): string {
  const pad = ' '.repeat(n);
  return text
    .split('\n')
    .map((l) => (l ? pad + l : l))
    .join('\n');
}

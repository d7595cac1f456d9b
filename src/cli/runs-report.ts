import type { Config } from '../config/config.js';
import {
  readRunDetail,
  readRunList,
  type RunDetail,
  type RunFilter,
  type RunRow,
} from '../reader/run-details.js';
import { describe as describeDrift } from '../sync/drift-hooks.js';
import { SyncError } from '../util/errors.js';
import { formatAge } from '../util/format-age.js';
import { screenWidth, wrapToWidth } from '../util/screen.js';
import { openForReading, type ReadingHandle } from '../warehouse/open-for-reading.js';
import { alsoIssuesText } from '../warehouse/reject-reasons.js';
import { formatTable } from './format-table.js';

/** Runs `read` on the warehouse (the published copy while another process holds it). */
async function withReading<T>(
  config: Config,
  read: (h: ReadingHandle, c: Awaited<ReturnType<ReadingHandle['warehouse']['connect']>>) => Promise<T>,
): Promise<T> {
  const opened = await openForReading(config.warehouse);
  try {
    const c = await opened.warehouse.connect();
    try {
      return await read(opened, c);
    } finally {
      c.closeSync();
    }
  } finally {
    opened.warehouse.close();
  }
}

/** The line that says which copy was read, when it is the published one (else nothing). */
function copyNote(h: ReadingHandle): string {
  if (h.copy === 'live') return '';
  const age = h.publishedAt ? `${formatAge(Date.now() - h.publishedAt.getTime())} ago` : 'at an unknown time';
  return `Read from the published copy ${h.warehouse.path}, written ${age}: runs after it are not shown (${h.livePath} is in use by ${h.heldBy ?? 'another process'}).\n\n`;
}

/** `reports-sync runs`: the run list as a table fitted to the terminal (or JSON: `{ copy, runs }`). */
export async function listRuns(
  config: Config,
  flags: RunFilter & { json?: boolean | undefined },
): Promise<string> {
  return withReading(config, async (h, c) => {
    const runs = await readRunList(c, flags);
    if (flags.json)
      return `${JSON.stringify({ copy: h.copy, warehouse: h.warehouse.path, runs }, null, 2)}\n`;
    const width = screenWidth(process.stdout);
    if (runs.length === 0) {
      const which = [flags.failed ? 'failed' : '', flags.job ? `of job ${flags.job}` : '']
        .filter(Boolean)
        .join(' ');
      return copyNote(h) + `No ${which ? `${which} ` : ''}run in the run log.\n`;
    }
    const table = formatTable(runs.map(listRow), {
      maxWidth: width,
      groupDigits: true,
      whole: new Set(['run']),
      dropFirst: ['updated', 'removed', 'flagged', 'loaded', 'source', 'seconds'],
    });
    const errors = runs
      .filter((r) => r.errorCode !== null)
      .map((r) => `  ${r.runId}: ${r.errorCode}: ${r.errorMessage ?? ''}\n`);
    const more = errors.length > 0 ? `\nErrors of these runs:\n${errors.join('')}` : '';
    return wrapToWidth(
      `${copyNote(h)}Runs, newest first (times UTC):\n${table}${more}\nOne run in full: reports-sync runs show <run>\n`,
      width,
    );
  });
}

function listRow(r: RunRow): Record<string, unknown> {
  return {
    run: r.runId,
    job: r.job,
    source: r.source,
    status: r.status,
    started: r.startedAt.slice(0, 19).replace('T', ' '),
    seconds: r.durationMs === null ? null : Math.round(r.durationMs / 100) / 10,
    read: r.recordsRead,
    loaded: r.recordsLoaded,
    rejected: r.recordsRejected,
    inserted: r.inserted,
    updated: r.updated,
    removed: r.removed,
    flagged: r.qualityFlags,
    error: r.errorCode,
  };
}

/**
 * `reports-sync runs show <run id>`: one run in full, as text fitted to the terminal or as JSON (the
 * {@link RunDetail} the run page shows).
 *
 * @throws SyncError `RUN_NOT_FOUND` (exit 2) for a run id the run log does not hold
 */
export async function showRun(
  config: Config,
  runId: string,
  flags: { examples: number; json?: boolean | undefined },
): Promise<string> {
  return withReading(config, async (h, c) => {
    const run = await readRunDetail(c, runId, flags.examples);
    if (!run) {
      throw new SyncError(
        'RUN_NOT_FOUND',
        `The run log of ${h.warehouse.path} holds no run ${JSON.stringify(runId)}: \`reports-sync runs\` lists the runs` +
          (h.copy === 'published'
            ? ' (this is the published copy: runs after it was written are not in it)'
            : ''),
        { context: { runId } },
      );
    }
    if (flags.json) return `${JSON.stringify({ copy: h.copy, warehouse: h.warehouse.path, run }, null, 2)}\n`;
    const width = screenWidth(process.stdout);
    return wrapToWidth(copyNote(h) + runText(run, width), width);
  });
}

function runText(r: RunDetail, width: number | undefined): string {
  const table = (rows: Record<string, unknown>[]) =>
    formatTable(rows, { maxWidth: width, groupDigits: true });
  const out: string[] = [];
  const duration = r.durationMs === null ? 'still running' : `${(r.durationMs / 1000).toFixed(1)} s`;
  out.push(`Run ${r.runId}: ${r.status}\n`);
  out.push(
    `  job ${r.job}, source ${r.source}, started ${r.startedAt} (UTC), ${duration}, ${r.attempts} attempt${r.attempts === 1 ? '' : 's'}\n`,
  );
  if (r.upstreamUrl) out.push(`  upstream ${r.upstreamUrl}\n`);
  if (r.errorCode !== null) out.push(`  error ${r.errorCode}: ${r.errorMessage ?? ''}\n`);
  if (r.notModified) out.push('  the export was not modified (304): nothing read or merged\n');
  if (r.tombstonesNote) out.push(`  tombstones: ${r.tombstonesNote}\n`);
  if (r.stats) {
    const d = r.stats.difference;
    out.push(
      `  upstream /stats total ${r.stats.upstreamTotal ?? 'unknown'}, warehouse ${r.stats.warehouseTotal}${d === null ? '' : ` (difference ${d})`}\n`,
    );
  }
  const counters = {
    read: r.recordsRead,
    loaded: r.recordsLoaded,
    rejected: r.recordsRejected,
    inserted: r.inserted,
    updated: r.updated,
    unchanged: r.counters.unchanged ?? 0,
    removed: r.removed,
    flagged: r.qualityFlags,
  };
  out.push(`\nCounters:\n${table([counters])}`);
  if (r.rejects.length === 0) out.push('\nRejects: none\n');
  else {
    out.push(
      `\nRejects by issue code and path (rejected_records):\n${table(
        r.rejects.map((g) => ({
          code: g.code,
          path: g.path || '(record)',
          records: g.records,
          message: g.message,
          first: g.locations[0] ?? '',
          'also wrong': alsoIssuesText(g.alsoIssues),
        })),
      )}`,
    );
    for (const g of r.rejects) {
      for (const e of g.examples)
        out.push(
          `  ${g.code} ${g.path || '(record)'}, ${e.location}${e.encoding === 'base64' ? ' (base64)' : ''}: ${e.raw}${e.truncated ? '…' : ''}\n`,
        );
    }
  }
  out.push(
    r.drift.length === 0
      ? '\nSchema drift: none\n'
      : `\nSchema drift:\n${r.drift.map((d) => `  ${describeDrift(d)}\n`).join('')}`,
  );
  out.push(
    r.qualityByRule.length === 0
      ? '\nData-quality flags: none\n'
      : `\nData-quality flags by rule:\n${table(r.qualityByRule)}`,
  );
  out.push(
    r.alerts.length === 0
      ? '\nAlerts: none raised\n'
      : `\nAlerts raised:\n${r.alerts.map((a) => `  ${a.at.toISOString()} ${a.type} (${a.state}): ${a.summary}\n`).join('')}`,
  );
  return out.join('');
}

import type { Dispatcher } from 'undici';
import type { Config } from '../config/config.js';
import { errorMessage, isSyncError } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import { fetchStats, type UpstreamStats } from '../upstream/fetch-stats.js';
import { statsTotal } from '../schema/flatten-stats.js';
import { recordStatsSnapshots, type SnapshotTotals } from '../warehouse/snapshots.js';
import { applyTombstones } from '../warehouse/tombstones.js';
import type { ExportSource } from './export-source.js';
import type { RunSyncOptions } from './run-sync.js';

/** Options of {@link exportFinisher}. */
export interface ExportFinisherOptions {
  config: Config;
  dispatcher: Dispatcher;
  logger: Logger;
  source: ExportSource;
  signal?: AbortSignal | undefined;
}

/**
 * The end of every export run (docs/how-a-sync-works.md: the run row, the merge, the checkpoint clearing and the stats
 * snapshot commit in one transaction), as the two runner hooks:
 * - `beforeMerge`, outside the transaction: fetch the upstream `/stats` (with retries) unless the source
 *   already asked for its total while paging (`upstreamTotal`: one fetch per run). A failure does not
 *   fail the export: it is logged, and the run then infers no tombstones (there is nothing to check against);
 * - `afterMerge`, inside it: tombstones with their guards (tombstones.ts), then the stats snapshots of the
 *   upstream body and of the warehouse as committed (`stats_snapshots`, `stats_values`), and a warning
 *   when the totals differ by more than `REPORTS_STATS_DIFF_WARN`; it returns what the run log row records
 *   of them (`removed`, `tombstones_note`, `sync_runs.stats_total_*`).
 */
export function exportFinisher(
  options: ExportFinisherOptions,
): Required<Pick<RunSyncOptions, 'beforeMerge' | 'afterMerge' | 'upstreamTotal'>> {
  let stats: UpstreamStats | undefined;
  let statsProblem: string | undefined;
  // One /stats fetch per run: the source may ask for the total while paging (csv-paging.ts), and the
  // snapshot then keeps that same body.
  let fetched: Promise<void> | undefined;
  const fetchOnce = (): Promise<void> => {
    fetched ??= (async () => {
      const logger = options.logger.child({ source: options.source.name });
      try {
        stats = await fetchStats({ ...options, logger });
        statsProblem = noTotalProblem(stats.body, options.config.statsTotalPath);
      } catch (err) {
        if (!isSyncError(err)) throw err;
        statsProblem = `/stats failed: ${errorMessage(err)}`;
        logger.warn({ err: err.toJSON() }, 'upstream /stats unavailable: no snapshot of it, no tombstones');
      }
    })();
    return fetched;
  };
  return {
    upstreamTotal: async () => {
      await fetchOnce();
      return statsTotal(stats?.body, options.config.statsTotalPath);
    },
    beforeMerge: async () => {
      await fetchOnce();
    },
    afterMerge: async (ctx) => {
      const { config } = options;
      const logger = options.logger.child({ runId: ctx.runId, source: options.source.name });
      const tombstones = await applyTombstones(ctx.connection, {
        runId: ctx.runId,
        seen: ctx.seen,
        now: ctx.now,
        complete: ctx.complete && options.source.fullExport,
        incompleteReason: options.source.fullExport ? ctx.incompleteReason : 'not a full export',
        inconsistentReason: ctx.tombstonesBlocked,
        statsTotal: statsTotal(stats?.body, config.statsTotalPath),
        statsProblem,
        minShare: config.tombstoneMinShare,
        statsTolerance: config.statsDiffWarn,
      });
      logger.info({ removed: tombstones.removed, note: tombstones.note }, 'tombstones');
      const totals = await recordStatsSnapshots(ctx.connection, {
        runId: ctx.runId,
        takenAt: ctx.now,
        upstream: stats?.body,
        upstreamText: stats?.text,
        totalPath: config.statsTotalPath,
        maxValues: config.statsMaxValues,
      });
      warnOnDiff(totals, config.statsDiffWarn, logger);
      return {
        removed: tombstones.removed,
        facts: { tombstonesNote: tombstones.note, ...totalsFacts(totals) },
      };
    },
  };
}

/** `sync_runs.stats_total_*` of a pair of snapshots. */
export function totalsFacts(totals: SnapshotTotals): {
  statsTotalUpstream: number | null;
  statsTotalWarehouse: number;
  statsTotalDiff: number | null;
} {
  return {
    statsTotalUpstream: totals.upstream ?? null,
    statsTotalWarehouse: totals.warehouse,
    statsTotalDiff: totals.diff ?? null,
  };
}

/**
 * Logs a warning when upstream and warehouse totals differ by more than `limit` reports, and one when the
 * upstream body had more numeric leaves than `stats_values` took (`REPORTS_STATS_MAX_VALUES`).
 */
export function warnOnDiff(totals: SnapshotTotals, limit: number, logger: Logger): void {
  if (totals.valuesLeftOut > 0) {
    logger.warn(
      { leftOut: totals.valuesLeftOut },
      `the /stats body has ${totals.valuesLeftOut} more numeric values than stats_values takes from one ` +
        'body (REPORTS_STATS_MAX_VALUES): they are in stats_snapshots.body only',
    );
  }
  if (totals.diff !== undefined && Math.abs(totals.diff) > limit) {
    logger.warn(
      { upstreamTotal: totals.upstream, warehouseTotal: totals.warehouse, diff: totals.diff, limit },
      'upstream /stats total and the warehouse differ (REPORTS_STATS_DIFF_WARN)',
    );
  }
}

/** Why a `/stats` body gives no total (none that is a count at `path`), or undefined when it gives one. */
function noTotalProblem(body: unknown, path: string): string | undefined {
  if (statsTotal(body, path) !== undefined) return undefined;
  return (
    `the /stats body has no \`${path}\` that is a count (a non-negative integer): set ` +
    'REPORTS_STATS_TOTAL_PATH to where its total of published reports is'
  );
}

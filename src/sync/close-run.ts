import type { DuckDBConnection } from '@duckdb/node-api';
import type { KnownLines } from '../normalize/known-lines.js';
import { collectGarbage } from '../util/collect-garbage.js';
import { failpoint } from '../util/failpoint.js';
import type { Logger } from '../util/logger.js';
import { withCheckpointsDeferred } from '../warehouse/deferred-checkpoint.js';
import {
  clearStaging,
  dropMergeTables,
  mergeStaging,
  prepareMerge,
  type PreparedMerge,
} from '../warehouse/merge.js';
import { recordSeen } from '../warehouse/merge-seen.js';
import { mergeTime, systemClock, type Clock } from '../warehouse/merge-time.js';
import { flagQuality } from '../warehouse/quality-flags.js';
import { changedAny, type MergeFigures } from '../warehouse/run-counters.js';
import type { RunFacts, RunLog } from '../warehouse/runs.js';
import { updateServingIndex } from '../warehouse/serving-index.js';
import { withThreads } from '../warehouse/threads.js';
import { withTransaction } from '../warehouse/transaction.js';
import { mergeMayVacuum, withVacuum } from '../warehouse/vacuum-policy.js';
import type { AfterMergeContext, AfterMergeResult } from './run-types.js';
import { checkStaged } from './run-errors.js';
import type { RunState } from './run-state.js';

/** The run {@link mergeRun} finishes: its id, log row, source name, state, logger and clock. */
export interface MergedRun {
  runId: string;
  log: RunLog;
  source: string;
  state: RunState;
  logger: Logger;
  /** Merge time source (default: the system clock; warehouse/merge-time.ts clamps it). */
  clock?: Clock | undefined;
  /** DuckDB threads for the merge (0: one per core; see warehouse/threads.ts). */
  mergeThreads: number;
  /** The source reads a full export (`ExportSource.fullExport`): its end is recorded for every report it saw. */
  fullExport: boolean;
  /** Staged reports per slice of the merge (merge.ts, `mergeSliceRows`). */
  sliceRows: number;
  /** The run's known-line set: when it marked the lines read, the merge takes its known lines from it. */
  knownLines?: KnownLines | undefined;
  /** Drops the caller's own reference to `knownLines`, once the merge has taken what it needs from it. */
  releaseKnownLines?: (() => void) | undefined;
  /** Evicts DuckDB's cached blocks before the checkpoint after the commit; only when nothing shares the instance. */
  evictCache?: (() => Promise<void>) | undefined;
}

/**
 * The end of a run read to its end: {@link prepareMerge} (the batch, and the line hashes the run learnt),
 * then one transaction that merges its staging (merge.ts) at the merge time of `clock`, flags impossible
 * values on the versions it wrote (quality-flags.ts), runs `afterMerge` (tombstones, stats snapshot),
 * records what a full export saw (merge-seen.ts), applies what changed to the reader's serving index
 * (serving-index.ts) and ends the run log row `succeeded` with its counters and facts (runs.ts), all or
 * nothing. Once committed, the merge's figures join the run's counters (`RunState.mergeCommitted`: a
 * rolled-back merge leaves none on the failed run) and its staging is cleared (merge.ts, `clearStaging`).
 * The merge runs with `mergeThreads` DuckDB threads, and its commit vacuums deleted rows only when
 * `mergeMayVacuum` says so (a full export, or many deleted rows; vacuum-policy.ts).
 *
 * @throws SyncError `COUNT_MISMATCH` when staging does not hold the records counted as loaded; whatever
 *   `afterMerge` or DuckDB throws (the transaction is rolled back)
 */
export async function mergeRun(
  connection: DuckDBConnection,
  run: MergedRun,
  afterMerge: AfterMerge | undefined,
): Promise<void> {
  const vacuum = await mergeMayVacuum(connection, run.fullExport);
  // The commit writes the log; the checkpoint follows it, still inside the vacuum setting (closing the
  // warehouse checkpoints a non-empty log, which would vacuum after all), with the merge's cached blocks
  // evicted first when the run has the instance to itself: at the commit, the checkpoint's memory came on
  // top of a cache filled to the limit (4M reports, nightly NDJSON run: 746–906 against 704–744 MiB).
  await withThreads(connection, run.mergeThreads, () =>
    withVacuum(connection, vacuum, () =>
      withCheckpointsDeferred(
        connection,
        () => mergeInTransaction(connection, run, afterMerge, vacuum),
        async () => {
          await failpoint('merge-logged');
          await run.evictCache?.();
        },
      ),
    ),
  );
}

type AfterMerge = (ctx: AfterMergeContext) => Promise<AfterMergeResult | void>;

/** Milliseconds of each phase of a merge, logged once committed: where a large warehouse's merge spends its time. */
class PhaseTimes {
  readonly ms: Record<string, number> = {};

  async timed<T>(phase: string, fn: () => Promise<T>): Promise<T> {
    const started = Date.now();
    try {
      return await fn();
    } finally {
      this.ms[phase] = Date.now() - started;
    }
  }
}

async function mergeInTransaction(
  connection: DuckDBConnection,
  run: MergedRun,
  afterMerge: AfterMerge | undefined,
  vacuum: boolean,
): Promise<void> {
  const { runId, source, fullExport, sliceRows } = run;
  const times = new PhaseTimes();
  const started = Date.now();
  let committing = 0;
  const prepared = await times.timed('prepareMs', () =>
    prepareMerge(
      connection,
      { runId, source, fullExport, sliceRows, fromCache: (run.state.exportInfo?.cacheAge ?? 0) > 0 },
      () => run.knownLines,
      () => releaseKnownLines(run),
    ),
  );
  const figures = await withTransaction(connection, async () => {
    const now = await mergeTime(connection, (run.clock ?? systemClock)(), run.logger);
    const merged = await mergeAndFlag(connection, run, { now, prepared, times });
    const added = await times.timed('afterMergeMs', async () =>
      afterMerge?.(afterMergeContext(connection, run, merged, now)),
    );
    if (added?.removed !== undefined) merged.figures.removed = added.removed;
    await finishMerged(connection, run, { ...merged, now, times, facts: added?.facts ?? {} });
    committing = Date.now();
    return merged.figures;
  });
  times.ms.commitMs = Date.now() - committing;
  // Only now: a merge that rolled back leaves its figures off the run's counters (and its failed row).
  run.state.mergeCommitted(figures);
  await times.timed('clearMs', () => clearStaging(connection, runId));
  run.logger.info({ ...times.ms, totalMs: Date.now() - started, vacuum }, 'merge committed');
}

/**
 * Lets go of the run's known-line set (~10.8 bytes a report: 103 MiB at 10M reports, ~410 MiB at 40M)
 * before the merge's statements, which would otherwise hold DuckDB's peak and the set at once: the marks are
 * in DuckDB by now (`prepareMerge`), and nothing after reads the set.
 */
function releaseKnownLines(run: MergedRun): void {
  if (run.knownLines === undefined) return;
  run.knownLines = undefined;
  run.releaseKnownLines?.();
  collectGarbage();
}

/** What the merge step of the finishing transaction found: its figures and the distinct reports seen. */
interface Merged {
  figures: MergeFigures;
  /** Distinct valid reports the merge took from the run (`MergeResult.unique`). */
  seen: number;
  /** Reports kept as stored because the run's copy is older (`MergeResult.older`). */
  older: number;
}

/**
 * Merges the run's staging at `now` (merge.ts) and flags impossible values on the versions it wrote
 * (quality-flags.ts): they are loaded, and flagged.
 *
 * @throws SyncError `COUNT_MISMATCH` when staging does not hold the records counted as loaded
 */
async function mergeAndFlag(
  connection: DuckDBConnection,
  run: MergedRun,
  step: { now: Date; prepared: PreparedMerge; times: PhaseTimes },
): Promise<Merged> {
  const { runId, source, fullExport, sliceRows, state } = run;
  const { now, times } = step;
  const merged = await times.timed('mergeMs', () =>
    mergeStaging(connection, { runId, source, now, fullExport, sliceRows }, step.prepared),
  );
  checkStaged(merged.staged, state.counters);
  if (merged.held > 0) {
    run.logger.warn(
      { held: merged.held },
      'reports kept as stored: a copy of each was quarantined, and its valid copy is not newer than the stored report',
    );
  }
  if (merged.older > 0) {
    run.logger.warn(
      { older: merged.older },
      'reports kept as stored: a cache served the export (Age), and its copy is older than the stored version ' +
        '(updatedAt) or, in an export holding such copies, would revive a removed report: a stale cached copy',
    );
  }
  const { duplicates, inserted, updated, unchanged, refined, revived } = merged;
  const figures = { duplicates, inserted, updated, unchanged, refined, revived, removed: 0, qualityFlags: 0 };
  if (inserted + updated + revived > 0) {
    figures.qualityFlags = await times.timed('qualityMs', () => flagQuality(connection, { runId, now }));
    if (figures.qualityFlags > 0) {
      run.logger.warn(
        { qualityFlags: figures.qualityFlags },
        'data quality: impossible values loaded and flagged',
      );
    }
  }
  return { figures, seen: merged.unique, older: merged.older };
}

/** What `afterMerge` sees: the open transaction, and the run's counters as they are if it commits. */
function afterMergeContext(
  connection: DuckDBConnection,
  run: MergedRun,
  merged: Merged,
  now: Date,
): AfterMergeContext {
  const { state } = run;
  const { complete, incompleteReason } = state;
  // An export holding copies older than the warehouse's is an older picture of the upstream: a report
  // missing from it may have been added since.
  const tombstonesBlocked =
    state.tombstonesBlocked ??
    (merged.older > 0
      ? `a cache served it (Age), and ${merged.older} of its reports are older than the stored versions or would be revived: a stale cached copy`
      : undefined);
  return {
    connection,
    runId: run.runId,
    now,
    counters: state.withMerge(merged.figures),
    seen: merged.seen,
    exportInfo: state.exportInfo,
    complete,
    incompleteReason,
    tombstonesBlocked,
  };
}

/**
 * The rest of the finishing transaction: records what a full export saw (merge-seen.ts), applies what
 * changed to the reader's serving index (serving-index.ts), drops the merge's work tables and ends the run
 * log row `succeeded` with its counters and facts (`facts`: those `afterMerge` returned).
 */
async function finishMerged(
  connection: DuckDBConnection,
  run: MergedRun,
  step: Merged & { now: Date; times: PhaseTimes; facts: RunFacts },
): Promise<void> {
  const { runId, state, log } = run;
  const { figures, now, times } = step;
  if (run.fullExport) {
    const seenAll = await times.timed('seenMs', () =>
      recordSeen(connection, { runId, now: now.toISOString(), seen: step.seen }),
    );
    if (seenAll) await log.note({ seenAllAt: now });
  }
  if (changedAny(figures)) {
    await times.timed('servingMs', () =>
      updateServingIndex(connection, { now, refined: figures.refined > 0 }),
    );
  }
  await dropMergeTables(connection);
  await log.succeed(
    state.withMerge(figures),
    {
      ...step.facts,
      attempts: state.attempts,
      complete: state.complete,
      outcome: changedAny(figures) ? 'changed' : 'unchanged',
      exportEtag: state.exportInfo?.etag ?? null,
      exportLastModified: state.exportInfo?.lastModified ?? null,
    },
    now,
  );
  await failpoint('in-merge');
}

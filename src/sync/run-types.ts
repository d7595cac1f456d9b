import type { DuckDBConnection } from '@duckdb/node-api';
import type { Dispatcher } from 'undici';
import type { Config } from '../config/config.js';
import type { SyncError } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import type { DriftEvent } from '../warehouse/drift.js';
import type { Clock } from '../warehouse/merge-time.js';
import type { RunCounters } from '../warehouse/run-counters.js';
import type { RunFacts, RunStatus } from '../warehouse/runs.js';
import type { ExportInfo, ExportSource } from './export-source.js';

/** Figures a long run reports while it goes (see `onProgress`). */
export interface Progress {
  runId: string;
  source: string;
  counters: Readonly<RunCounters>;
  /** Milliseconds since the run started. */
  elapsedMs: number;
  /** Current page of a paged export. */
  page?: number | undefined;
}

/** Options of {@link runSync}. */
export interface RunSyncOptions {
  connection: DuckDBConnection;
  config: Config;
  dispatcher: Dispatcher;
  logger: Logger;
  source: ExportSource;
  /** Job name for `sync_runs.job` (defaults to `sync-<source>`). */
  job?: string;
  /** Aborting stops the run between records; it is recorded as `aborted` and nothing is merged. */
  signal?: AbortSignal;
  /**
   * Called after each batch is handed to its background commit (and at the end): the counters include it
   * before its commit is done.
   */
  onProgress?: (p: Progress) => void;
  /**
   * Hook run once the export is read and before the final transaction opens (network calls belong here,
   * not inside the transaction: e.g. fetching `/stats` for the tombstone guard). A throw fails the run.
   */
  beforeMerge?: (ctx: BeforeMergeContext) => Promise<void>;
  /**
   * Hook run inside the final transaction, after the merge (tombstones, stats snapshot). What it returns
   * (reports removed, facts) goes into the run log row the transaction commits.
   */
  afterMerge?: (ctx: AfterMergeContext) => Promise<AfterMergeResult | void>;
  /** Given to the source as `ReadContext.upstreamTotal` (the `/stats` total, fetched once). */
  upstreamTotal?: () => Promise<number | undefined>;
  /** The clock of the merge time (default: the system clock; tests inject one that goes backwards). */
  clock?: Clock | undefined;
  /**
   * Called once the run is past its last stop point: the signal was checked one last time (a signal
   * before this aborts the run, nothing merged), and the finishing transaction starts now and is never
   * cut — it commits (or fails on its own). Synchronous with that check, so a signal handler that saw
   * this call knows the run will not be recorded `aborted` by the signal. `records`: records to merge (0
   * for a 304).
   */
  onCommit?: ((runId: string, records: number) => void) | undefined;
  /**
   * Evicts the blocks DuckDB holds cached and unpinned (`evictCachedBlocks`), through another connection
   * of the instance: there a refused `memory_limit` cannot abort this run's open transaction. Used only
   * while the run reads with a lowered limit, and before its merge's checkpoint when it did: either means
   * nothing else shares the instance.
   */
  evictCache?: (() => Promise<void>) | undefined;
}

/** What {@link RunSyncOptions.beforeMerge} gets: the run as read, nothing merged yet. */
export interface BeforeMergeContext {
  runId: string;
  counters: RunCounters;
  exportInfo: ExportInfo | undefined;
  /** The export was read to its end (see {@link AfterMergeContext.complete}). */
  complete: boolean;
  incompleteReason: string | undefined;
  tombstonesBlocked: string | undefined;
}

/** What {@link RunSyncOptions.afterMerge} gets: the open transaction's connection and the run so far. */
export interface AfterMergeContext {
  connection: DuckDBConnection;
  runId: string;
  now: Date;
  /** The run's counters as they are if this transaction commits (the merge's figures counted in). */
  counters: Readonly<RunCounters>;
  /** Distinct valid reports the merge took from the run (`MergeResult.unique`). */
  seen: number;
  exportInfo: ExportInfo | undefined;
  /** The export was read to its end: false when the source stopped early (its read returned `complete: false`). */
  complete: boolean;
  /** Why the export is incomplete, when it is. */
  incompleteReason: string | undefined;
  /** Why the export, though complete, cannot be proven consistent (`ReadOutcome.tombstonesBlocked`). */
  tombstonesBlocked: string | undefined;
}

/**
 * What an `afterMerge` hook adds to the run log row of the finishing transaction: the reports it removed
 * (tombstones) and facts (its note, the stats totals). Written only by that transaction, so a rollback
 * leaves none of it.
 */
export interface AfterMergeResult {
  removed?: number;
  facts?: RunFacts;
}

/** The outcome of a run, as the CLI prints it and `sync_runs` stores it. */
export interface RunSummary {
  runId: string;
  source: string;
  status: RunStatus;
  counters: RunCounters;
  durationMs: number;
  attempts: number;
  exportInfo?: ExportInfo | undefined;
  error?: SyncError | undefined;
  /** The export answered 304 to the run's conditional request: nothing was read or merged. */
  notModified?: boolean | undefined;
  /** Set when a succeeded run stopped before the end of its export (`sync_runs.complete` false): why. */
  incompleteReason?: string | undefined;
  /** Schema drift the run saw (warehouse/drift.ts), when its source checks for it. */
  drift?: readonly DriftEvent[] | undefined;
}

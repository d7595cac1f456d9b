import { writeFileSync } from 'node:fs';
import type { DuckDBConnection } from '@duckdb/node-api';
import { BatchFiles, type BatchFile, type WrittenBatch } from './batch-files.js';
import type { DecodedBlock, Reject } from '../normalize/reject.js';
import { SyncError } from '../util/errors.js';
import { failpointRefusal } from '../util/failpoint.js';
import { appendRejects, type QuarantineTarget } from './quarantine.js';
import { findRefusedRows, StagedRowsRefused } from './refused-rows.js';
import type { RunCounters } from './run-counters.js';
import type { RunLog } from './runs.js';
import { dropRunStaging, withTransaction } from './transaction.js';

/** What a checkpoint records besides the counters: where a resumed run continues. */
export interface CheckpointInfo {
  page?: number | undefined;
  nextUrl?: string | undefined;
}

/** Where and for which run a {@link StagingWriter} stages. */
export interface StagingTarget extends QuarantineTarget {
  /** Folder for the batch files DuckDB loads (created when missing; see `spoolDirFor`). */
  spoolDir: string;
  /** Batches already committed by the run being resumed. */
  startBatch?: number | undefined;
  /** The run's log row: each batch's transaction writes its checkpoint's counters there. */
  log: RunLog;
  /**
   * Told how many rows of a committed batch DuckDB refused (quarantined instead): the run's live counters
   * move them from loaded to rejected (the batch's own copy is moved here).
   */
  onRefused: (records: number) => void;
}

/** One batch handed to the background commit: its files, rejects and the figures of its checkpoint. */
interface Batch extends WrittenBatch {
  number: number;
  counters: RunCounters;
  checkpoint: CheckpointInfo;
}

/**
 * Stages the decoded blocks of one run in batches. Blocks are written to batch files (batch-files.ts);
 * {@link flush} hands the batch to DuckDB, which loads it with `read_json` into `staging_reports`/
 * `staging_seen` in one transaction holding the batch's rejects, a `sync_checkpoints` row and the run's
 * counters, so a crash leaves whole batches only (docs/how-a-sync-works.md).
 *
 * The commit runs in the background (DuckDB's threads) while the caller reads the next batch: at most one
 * batch commits at a time, the next {@link flush} waits for it, and {@link finish} waits for the last one
 * and reports any failure (through the Appender, the main thread spent ~17 s of a 1M-record sync
 * converting values and flushing). Every record carries its sequence number (`seq`, arrival order: "last
 * seen wins" on ties) from its source (NDJSON: its line number; CSV: page × 2^29 + row).
 */
export class StagingWriter {
  readonly #c: DuckDBConnection;
  readonly #t: StagingTarget;
  readonly #files: BatchFiles;
  #batch: number;
  #inflight: Promise<void> | null = null;
  #failure: { error: unknown } | null = null;
  /** Rejects of batches that never committed (see {@link close}). */
  #uncommitted: Reject[] = [];

  constructor(connection: DuckDBConnection, target: StagingTarget) {
    this.#c = connection;
    this.#t = target;
    this.#batch = target.startBatch ?? 0;
    this.#files = new BatchFiles(target.spoolDir, target.runId);
  }

  /** Records added since the last {@link flush}. */
  get pending(): number {
    return this.#files.pending;
  }

  /**
   * Stages a decoded block (an NDJSON block or a CSV page, decoded by a worker or inline): its batch-file
   * lines and its rejects.
   */
  addBlock(block: DecodedBlock): void {
    this.#files.add(block, this.#batch + 1);
  }

  /**
   * Ends the current batch and starts committing it (rows, known lines, rejects, a checkpoint and a copy of
   * `counters` in one transaction) after the previous batch's commit. Resolves once the commit has started,
   * not when it is done: {@link drain} or {@link finish} wait for it.
   *
   * @throws the previous batch's commit failure, or a file-system error writing this batch's files.
   */
  async flush(counters: RunCounters, checkpoint: CheckpointInfo = {}): Promise<void> {
    const number = ++this.#batch;
    const written = this.#files.take();
    const batch: Batch = { ...written, number, counters, checkpoint: { ...checkpoint } };
    try {
      await this.drain();
    } catch (err) {
      this.#uncommitted.push(...batch.rejects);
      this.#files.remove(batch);
      throw err;
    }
    // Copied once the previous commit is done: rows it moved to the quarantine are counted in.
    batch.counters = { ...counters };
    this.#inflight = this.#commit(batch).then(
      () => this.#files.remove(batch),
      (error: unknown) => {
        this.#uncommitted.push(...batch.rejects);
        this.#files.remove(batch);
        this.#failure = { error };
      },
    );
  }

  /** Creates the spool folder. Call before reading. */
  async open(): Promise<void> {
    this.#files.open();
  }

  /**
   * Waits until every flushed batch is committed.
   *
   * @throws the first failure of a background commit (the batch was rolled back; later ones never ran).
   */
  async drain(): Promise<void> {
    if (this.#inflight) await this.#inflight;
    this.#inflight = null;
    if (this.#failure) throw this.#failure.error;
  }

  /**
   * Waits for the last commit (rethrowing its failure), then releases the writer's files. Call once reading
   * ended and the last batch was flushed, before the merge.
   */
  async finish(): Promise<void> {
    await this.drain();
    await this.close();
  }

  /**
   * Ends the writer without committing what was added since the last {@link flush}: waits for a running
   * commit (ignoring its failure) and deletes the writer's files. Returns the rejects that were never
   * committed (added since the last flush, or in a batch whose commit failed): a failed run stores them
   * with its run log, so its `records_rejected` matches its `rejected_records`. Idempotent (a second call
   * returns none); never throws.
   */
  async close(): Promise<Reject[]> {
    if (this.#inflight) await this.#inflight;
    this.#inflight = null;
    const uncommitted = [...this.#uncommitted, ...this.#files.discard()];
    this.#uncommitted = [];
    return uncommitted;
  }

  /** Drops everything this run staged (used when an export restarts from its beginning). */
  async discard(): Promise<void> {
    await this.close(); // the attempt's rejects go with it: the export is read again from its start
    this.#failure = null;
    this.#batch = 0;
    await withTransaction(this.#c, (c) => dropRunStaging(c, this.#t.runId, { rejects: true }));
  }

  /**
   * Commits one batch. When DuckDB refuses its rows (a value no column can hold got past the validator),
   * the refused rows are found by bisection ({@link findRefusedRows}), quarantined with DuckDB's error as
   * the reason and moved from loaded to rejected in the counters, and the rest is committed: one bad value
   * never fails the run.
   */
  async #commit(batch: Batch): Promise<void> {
    try {
      await this.#commitOnce(batch);
      return;
    } catch (err) {
      if (!(err instanceof StagedRowsRefused) || !batch.rows)
        throw err instanceof StagedRowsRefused ? err.cause : err;
      const rows = batch.rows;
      const found = await findRefusedRows(this.#c, rows.path, (path) =>
        this.#load({ path, lines: -1, longestLine: rows.longestLine }, STAGED_ROWS, 'staging_reports'),
      );
      if (!found) throw err.cause;
      writeFileSync(rows.path, found.kept.join(''));
      batch.rows = { path: rows.path, lines: found.kept.length, longestLine: rows.longestLine };
      batch.rejects.push(...found.rejects);
      batch.counters.recordsLoaded -= found.rejects.length;
      batch.counters.recordsRejected += found.rejects.length;
      this.#t.onRefused(found.rejects.length);
    }
    await this.#commitOnce(batch);
  }

  async #commitOnce(batch: Batch): Promise<void> {
    const run = this.#t.runId;
    await withTransaction(this.#c, async (c) => {
      if (batch.rows && batch.rows.lines > 0) {
        try {
          await failpointRefusal(batch.rows.path);
          await this.#load(batch.rows, STAGED_ROWS, 'staging_reports');
        } catch (err) {
          throw err instanceof SyncError ? err : new StagedRowsRefused(err);
        }
      }
      if (batch.seen) await this.#load(batch.seen, SEEN_ROWS, 'staging_seen');
      if (batch.rejects.length > 0) await appendRejects(c, this.#t, batch.rejects);
      await c.run(
        `INSERT INTO sync_checkpoints VALUES ($run, $batch, $page, $read, $loaded, $rejected, $bytes, $next, now())`,
        {
          run,
          batch: batch.number,
          page: batch.checkpoint.page ?? null,
          read: batch.counters.recordsRead,
          loaded: batch.counters.recordsLoaded,
          rejected: batch.counters.recordsRejected,
          bytes: batch.counters.bytesRead,
          next: batch.checkpoint.nextUrl ?? null,
        },
      );
      await this.#t.log.progress(batch.counters);
    });
  }

  /** Loads one batch file; checks DuckDB read every line written (a short read would lose records). */
  async #load(file: BatchFile, sql: (maxObjectBytes: number) => string, table: string): Promise<void> {
    // read_json refuses a line longer than maximum_object_size (default 16 MiB): size it to the batch.
    const maxObjectBytes = Math.max(16 * 1024 * 1024, file.longestLine + 1024);
    const result = await this.#c.run(sql(maxObjectBytes), { run: this.#t.runId, file: file.path });
    if (file.lines >= 0 && result.rowsChanged !== file.lines) {
      throw new SyncError(
        'STAGING_MISMATCH',
        `DuckDB loaded ${result.rowsChanged} rows into ${table} from a batch of ${file.lines} records`,
        { context: { table, written: file.lines, loaded: result.rowsChanged } },
      );
    }
  }
}

// A batch line: seq, location (read only by refused-rows.ts), content hash, CSV projection hash (null when
// equal to the content hash), line hash, `extra` as JSON text, and the canonical report.
// Timestamps and `extra` travel as text and are cast by DuckDB, as the Appender did (faster than
// typed values).
const STAGED_ROWS = (maxObjectBytes: number) => `
  INSERT INTO staging_reports (run_id, seq, id, status, destination, category, description, lat, lng,
    address, created_at, updated_at, extra, content_hash, csv_hash, line_hash)
  SELECT $run, s, r.id, r.status, r.destination, r.category, r.description, r.location.lat, r.location.lng,
    r.address, r.createdAt::TIMESTAMPTZ, r.updatedAt::TIMESTAMPTZ, x::JSON, h, ph, lh::BIGINT
  FROM read_json($file, format = 'newline_delimited', maximum_object_size = ${maxObjectBytes}, columns = {
    s: 'BIGINT', h: 'VARCHAR', ph: 'VARCHAR', lh: 'VARCHAR', x: 'VARCHAR',
    r: 'STRUCT(id VARCHAR, status VARCHAR, destination VARCHAR, category VARCHAR, description VARCHAR,
      location STRUCT(lat DOUBLE, lng DOUBLE), address VARCHAR, createdAt VARCHAR, updatedAt VARCHAR)'})`;
const SEEN_ROWS = (maxObjectBytes: number) => `
  INSERT INTO staging_seen (run_id, seq, line_hash)
  SELECT $run, s, lh::BIGINT
  FROM read_json($file, format = 'newline_delimited', maximum_object_size = ${maxObjectBytes},
    columns = {s: 'BIGINT', lh: 'VARCHAR'})`;

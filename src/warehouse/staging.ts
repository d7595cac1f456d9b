import { holdsSecret, redactSecrets } from '../util/redact.js';
import { mkdirSync, readdirSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { RecordLocation } from '../extract/record.js';
import { formatLocation } from '../extract/record.js';
import type { RecordIssue, Report } from '../schema/report.js';
import { SyncError } from '../util/errors.js';
import { saveCounters } from './runs.js';
import type { RunCounters } from './run-counters.js';
import type { DecodedBlock } from '../extract/ndjson-block.js';
import { LineFile, type EncodedLines } from '../util/line-file.js';
import { stagedRowLine } from './staged-line.js';
import { findRefusedRows, StagedRowsRefused } from './refused-rows.js';
import { failpointRefusal } from '../util/failpoint.js';

/** A record that failed parsing or validation, as stored in `rejected_records`. */
export interface Reject {
  location: RecordLocation;
  /** The record as received: its text, or its bytes in base64 when `rawEncoding` is `base64`. */
  raw: string;
  /** `base64` when the record's bytes are not valid UTF-8 (see extract/utf8.ts); text otherwise. */
  rawEncoding?: 'base64' | undefined;
  rawTruncated?: boolean | undefined;
  /** Size of the full raw record in bytes (when `raw` was cut). */
  rawBytes?: number | undefined;
  recordId?: string | undefined;
  issues: RecordIssue[];
}

/** What a checkpoint records besides the counters: where a resumed run continues. */
export interface CheckpointInfo {
  page?: number | undefined;
  nextUrl?: string | undefined;
}

/** Where and for which run a {@link StagingWriter} stages. */
export interface StagingTarget {
  runId: string;
  /** `ndjson` | `csv`, stored with each reject. */
  source: string;
  /** Raw text kept per reject (bytes); longer text is cut and flagged. */
  rawMaxBytes: number;
  /** Folder for the batch files DuckDB loads (created when missing; see {@link spoolDirFor}). */
  spoolDir: string;
  /** Sequence number to continue from when resuming a run (staged rows already hold 0..seq-1). */
  startSeq?: number | undefined;
  /** Batches already committed by the run being resumed. */
  startBatch?: number | undefined;
}

/** One batch handed to the background commit: its files, rejects and the figures of its checkpoint. */
interface Batch {
  number: number;
  rows: BatchFile | null;
  seen: LineFile | null;
  rejects: Reject[];
  counters: RunCounters;
  /** The run's live counters: rows DuckDB refuses move from loaded to rejected there too. */
  live: RunCounters;
  checkpoint: CheckpointInfo;
}

/** A closed batch file: where it is, its lines and its longest line (bytes). */
interface BatchFile {
  readonly path: string;
  readonly lines: number;
  readonly longestLine: number;
}

/**
 * Stages the valid reports, known (unchanged) lines and rejects of one run in batches. Records are written
 * as NDJSON to a batch file ({@link LineFile}); {@link flush} hands the batch to DuckDB, which loads it
 * with `read_json` into `staging_reports`/`staging_seen` in one transaction holding the batch's rejects, a
 * `sync_checkpoints` row and the run's counters, so a crash leaves whole batches only (DESIGN.md §6).
 *
 * The commit runs in the background (DuckDB's threads) while the caller reads the next batch: at most one
 * batch commits at a time, the next {@link flush} waits for it, and {@link finish} waits for the last one
 * and reports any failure (through the Appender, the main thread spent ~17 s of a 1M-record sync
 * converting values and flushing). Every valid record gets a sequence number (`seq`, arrival order: "last
 * seen wins" on ties), staged or known: the source's own (NDJSON: its line number; CSV: page × 2^29 + row)
 * or the writer's next.
 */
export class StagingWriter {
  readonly #c: DuckDBConnection;
  readonly #t: StagingTarget;
  #rows: LineFile | null = null;
  #seen: LineFile | null = null;
  #rejects: Reject[] = [];
  #seq: number;
  #batch: number;
  #buffered = 0;
  #inflight: Promise<void> | null = null;
  #failure: { error: unknown } | null = null;
  /** Rejects of batches that never committed (see {@link close}). */
  #uncommitted: Reject[] = [];
  #files = new Set<string>();

  constructor(connection: DuckDBConnection, target: StagingTarget) {
    this.#c = connection;
    this.#t = target;
    this.#seq = target.startSeq ?? 0;
    this.#batch = target.startBatch ?? 0;
  }

  /** Records added since the last {@link flush}. */
  get pending(): number {
    return this.#buffered;
  }

  /**
   * Stages one valid report: `json` is its canonical JSON (`canonicalJson` of schema/report.ts), `hash` its
   * content hash, `seq` its arrival order when the source numbers records itself (NDJSON: the line
   * number), else the writer's next number. Staged without a line hash (see ExtractedRecord).
   */
  add(r: Report, json: string, hash: string, location: RecordLocation, seq?: number): void {
    this.#buffered++;
    const s = seq ?? this.#seq++;
    const line = stagedRowLine(s, location, r, json, hash, undefined);
    (this.#rows ??= this.#file('rows')).write(redactSecrets(line));
  }

  /**
   * Stages a block decoded elsewhere (an NDJSON block or a CSV page, by a decode worker or inline):
   * batch-file lines already built, and the block's rejects.
   */
  addBlock(block: DecodedBlock): void {
    this.#buffered += block.loaded + block.rejected;
    if (block.rows.lines > 0) (this.#rows ??= this.#file('rows')).writeBytes(redactLines(block.rows));
    if (block.seen.lines > 0) (this.#seen ??= this.#file('seen')).writeBytes(block.seen);
    for (const r of block.rejects) this.#rejects.push(r);
  }

  /** Stages one rejected record (its raw text is redacted when it is stored, see #appendRejects). */
  reject(reject: Reject): void {
    this.#buffered++;
    this.#rejects.push(reject);
  }

  /**
   * Ends the current batch and starts committing it (rows, known lines, rejects, a checkpoint and a copy of
   * `counters` in one transaction) after the previous batch's commit. Resolves once the commit has started,
   * not when it is done: {@link drain} or {@link finish} wait for it.
   *
   * @throws the previous batch's commit failure, or a file-system error writing this batch's files.
   */
  async flush(counters: RunCounters, checkpoint: CheckpointInfo = {}): Promise<void> {
    const rows = this.#rows;
    const batch: Batch = {
      number: ++this.#batch,
      rows,
      seen: this.#seen,
      rejects: this.#rejects,
      counters,
      live: counters,
      checkpoint: { ...checkpoint },
    };
    this.#rows = null;
    this.#seen = null;
    this.#rejects = [];
    this.#buffered = 0;
    try {
      try {
        rows?.close();
      } finally {
        batch.seen?.close(); // closed even when the rows file failed, so no descriptor is left open
      }
      await this.drain();
    } catch (err) {
      this.#uncommitted.push(...batch.rejects);
      this.#remove(batch);
      throw err;
    }
    // Copied once the previous commit is done: rows it moved to the quarantine are counted in.
    batch.counters = { ...counters };
    this.#inflight = this.#commit(batch).then(
      () => this.#remove(batch),
      (error: unknown) => {
        this.#uncommitted.push(...batch.rejects);
        this.#remove(batch);
        this.#failure = { error };
      },
    );
  }

  /** Creates the spool folder. Call before reading. */
  async open(): Promise<void> {
    mkdirSync(this.#t.spoolDir, { recursive: true });
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
    const uncommitted = [...this.#uncommitted, ...this.#rejects];
    this.#uncommitted = [];
    for (const f of [this.#rows, this.#seen]) {
      try {
        f?.close();
      } catch {
        // a file that cannot be flushed is deleted below anyway
      }
    }
    this.#rows = null;
    this.#seen = null;
    this.#rejects = [];
    this.#buffered = 0;
    for (const path of this.#files) removeQuietly(path);
    this.#files.clear();
    try {
      rmdirSync(this.#t.spoolDir); // only when empty: another writer's files stay
    } catch {
      // not empty, or already gone
    }
    return uncommitted;
  }

  /** Drops everything this run staged (used when an export restarts from its beginning). */
  async discard(): Promise<void> {
    await this.close(); // the attempt's rejects go with it: the export is read again from its start
    this.#failure = null;
    this.#seq = 0;
    this.#batch = 0;
    const c = this.#c;
    const run = { run: this.#t.runId };
    await c.run('BEGIN TRANSACTION');
    await c.run('DELETE FROM staging_reports WHERE run_id = $run', run);
    await c.run('DELETE FROM staging_seen WHERE run_id = $run', run);
    await c.run('DELETE FROM rejected_records WHERE run_id = $run', run);
    await c.run('DELETE FROM sync_checkpoints WHERE run_id = $run', run);
    await c.run('COMMIT');
  }

  #file(kind: 'rows' | 'seen'): LineFile {
    const path = join(this.#t.spoolDir, `${this.#t.runId}-${this.#batch + 1}-${kind}.ndjson`);
    this.#files.add(path);
    return new LineFile(path);
  }

  /** Deletes a batch's files; never throws (a file that cannot be deleted is left behind, not fatal). */
  #remove(batch: Batch): void {
    for (const f of [batch.rows, batch.seen]) {
      if (!f) continue;
      removeQuietly(f.path);
      this.#files.delete(f.path);
    }
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
      for (const counters of new Set([batch.counters, batch.live])) {
        counters.recordsLoaded -= found.rejects.length;
        counters.recordsRejected += found.rejects.length;
      }
    }
    await this.#commitOnce(batch);
  }

  async #commitOnce(batch: Batch): Promise<void> {
    const c = this.#c;
    const run = this.#t.runId;
    await c.run('BEGIN TRANSACTION');
    try {
      if (batch.rows && batch.rows.lines > 0) {
        try {
          await failpointRefusal(batch.rows.path);
          await this.#load(batch.rows, STAGED_ROWS, 'staging_reports');
        } catch (err) {
          throw err instanceof SyncError ? err : new StagedRowsRefused(err);
        }
      }
      if (batch.seen) await this.#load(batch.seen, SEEN_ROWS, 'staging_seen');
      if (batch.rejects.length > 0) await this.#appendRejects(batch.rejects);
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
      await saveCounters(c, run, batch.counters);
      await c.run('COMMIT');
    } catch (err) {
      await c.run('ROLLBACK').catch(() => undefined);
      throw err;
    }
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

  async #appendRejects(rejects: Reject[]): Promise<void> {
    await appendRejects(this.#c, this.#t, rejects);
  }
}

/**
 * Appends quarantine entries of `target.runId` to `rejected_records` (raw text cut to `target.rawMaxBytes`
 * on a character boundary; base64 raw kept as given). Call inside the caller's transaction.
 */
export async function appendRejects(
  connection: DuckDBConnection,
  target: Pick<StagingTarget, 'runId' | 'source' | 'rawMaxBytes'>,
  rejects: readonly Reject[],
): Promise<void> {
  if (rejects.length === 0) return;
  const appender = await connection.createAppender('rejected_records');
  const now = new Date().toISOString();
  const max = target.rawMaxBytes;
  try {
    for (const r of rejects) {
      const base64 = r.rawEncoding === 'base64';
      const fullBytes = r.rawBytes ?? Buffer.byteLength(r.raw);
      const cut = fullBytes > max || r.rawTruncated === true;
      // A secret echoed by the upstream never lands: the stored raw text differs from the source there
      // (redact.ts), `raw_bytes` keeps the source's size. Redacted before the cut, so no prefix survives.
      const redacted = base64 ? redactBase64(r.raw) : redactSecrets(r.raw);
      const raw = !base64 && Buffer.byteLength(redacted) > max ? cutUtf8(redacted, max) : redacted;
      appender.appendVarchar(target.runId);
      appender.appendVarchar(target.source);
      appender.appendVarchar(formatLocation(r.location));
      appender.appendBigInt(BigInt(r.location.line));
      if (r.location.page === undefined) appender.appendNull();
      else appender.appendInteger(r.location.page);
      if (r.location.row === undefined) appender.appendNull();
      else appender.appendBigInt(BigInt(r.location.row));
      if (r.recordId === undefined) appender.appendNull();
      else appender.appendVarchar(redactSecrets(r.recordId));
      appender.appendVarchar(raw);
      appender.appendBoolean(cut);
      appender.appendBigInt(BigInt(fullBytes));
      appender.appendVarchar(redactSecrets(JSON.stringify(r.issues)));
      appender.appendVarchar(now);
      appender.appendVarchar(base64 ? 'base64' : 'text');
      appender.endRow();
    }
    appender.flushSync();
  } finally {
    appender.closeSync();
  }
}

// A batch line: seq, location, content hash, line hash, `extra` as JSON text, and the canonical report.
// Timestamps and `extra` travel as text and are cast by DuckDB, as the Appender did (faster than
// typed values).
const STAGED_ROWS = (maxObjectBytes: number) => `
  INSERT INTO staging_reports (run_id, seq, location, id, status, destination, category, description, lat, lng,
    address, created_at, updated_at, extra, content_hash, csv_hash, line_hash)
  SELECT $run, s, l, r.id, r.status, r.destination, r.category, r.description, r.location.lat, r.location.lng,
    r.address, r.createdAt::TIMESTAMPTZ, r.updatedAt::TIMESTAMPTZ, x::JSON, h, ph, lh::BIGINT
  FROM read_json($file, format = 'newline_delimited', maximum_object_size = ${maxObjectBytes}, columns = {
    s: 'BIGINT', l: 'VARCHAR', h: 'VARCHAR', ph: 'VARCHAR', lh: 'VARCHAR', x: 'VARCHAR',
    r: 'STRUCT(id VARCHAR, status VARCHAR, destination VARCHAR, category VARCHAR, description VARCHAR,
      location STRUCT(lat DOUBLE, lng DOUBLE), address VARCHAR, createdAt VARCHAR, updatedAt VARCHAR)'})`;
const SEEN_ROWS = (maxObjectBytes: number) => `
  INSERT INTO staging_seen (run_id, seq, line_hash)
  SELECT $run, s, lh::BIGINT
  FROM read_json($file, format = 'newline_delimited', maximum_object_size = ${maxObjectBytes},
    columns = {s: 'BIGINT', lh: 'VARCHAR'})`;

/**
 * The folder for a warehouse's batch files: `<warehouse>.spool` beside the file (same disk, same
 * permissions), or one under the OS temp folder for an in-memory warehouse.
 */
export function spoolDirFor(warehousePath: string, tmp: string): string {
  return warehousePath === ':memory:'
    ? join(tmp, `reports-sync-spool-${process.pid}`)
    : `${warehousePath}.spool`;
}

/**
 * Deletes batch files left by runs that were killed (their staging rows were committed or rolled back by
 * DuckDB; the files are only transport). Call at the start of a run: one process holds the warehouse, and it
 * runs one sync at a time.
 */
export function clearSpool(spoolDir: string): void {
  let names: string[];
  try {
    names = readdirSync(spoolDir);
  } catch {
    return;
  }
  for (const name of names) if (name.endsWith('.ndjson')) rmSync(join(spoolDir, name), { force: true });
}

/** Cuts a string to at most `maxBytes` UTF-8 bytes without splitting a character. */
export function cutUtf8(text: string, maxBytes: number): string {
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= maxBytes) return text;
  let end = maxBytes;
  while (end > 0 && (buf[end]! & 0xc0) === 0x80) end--;
  return buf.subarray(0, end).toString('utf8');
}

/** `rm -f` that never throws: a leftover batch file is garbage in the spool folder, not a failed run. */
function removeQuietly(path: string): void {
  try {
    rmSync(path, { force: true });
  } catch {
    // EPERM/EBUSY: left for the next run's clearSpool
  }
}

/**
 * Staged lines with any secret an upstream echoed in a report's field redacted (redact.ts): a report never
 * carries the API key into the warehouse. The check is a byte search; only a block that holds one is
 * decoded and encoded again.
 */
function redactLines(encoded: EncodedLines): EncodedLines {
  if (!holdsSecret(encoded.bytes)) return encoded;
  const bytes = Buffer.from(redactSecrets(Buffer.from(encoded.bytes).toString('utf8')), 'utf8');
  // '[redacted]' may be longer than the secret: the longest line grows by at most the difference per hit.
  return { ...encoded, bytes, longest: encoded.longest + bytes.length };
}

/** {@link redactSecrets} over base64-carried raw bytes: secrets are ASCII, so latin1 maps bytes 1:1. */
function redactBase64(raw: string): string {
  const bytes = Buffer.from(raw, 'base64').toString('latin1');
  const redacted = redactSecrets(bytes);
  return redacted === bytes ? raw : Buffer.from(redacted, 'latin1').toString('base64');
}

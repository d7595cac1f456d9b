import type { DuckDBAppender, DuckDBConnection } from '@duckdb/node-api';
import type { RecordLocation } from '../extract/record.js';
import { formatLocation } from '../extract/record.js';
import type { RecordIssue, Report } from '../schema/report.js';
import { saveCounters } from './runs.js';
import type { RunCounters } from './run-counters.js';

/** A record that failed parsing or validation, as stored in `rejected_records`. */
export interface Reject {
  location: RecordLocation;
  raw: string;
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

interface StagedRow {
  seq: number;
  report: Report;
  hash: string;
  location: RecordLocation;
  lineHash: bigint | undefined;
}

/**
 * Buffers valid reports, known (unchanged) lines and rejects of one run and commits them in batches: each
 * {@link flush} is one transaction holding the batch's staging rows (DuckDB Appender), the hashes of its
 * known lines (`staging_seen`), its rejects, a `sync_checkpoints` row and the run's counters, so a crash
 * leaves whole batches only (DESIGN.md §6). Every valid record gets the next sequence number (`seq`,
 * arrival order: "last seen wins" on ties), staged or known.
 */
export class StagingWriter {
  private rows: StagedRow[] = [];
  private seenSeq: number[] = [];
  private seenHash: bigint[] = [];
  private rejects: Reject[] = [];
  private seq = 0;
  private batch = 0;
  private buffered = 0;
  /**
   * After the first commit the writer keeps a transaction open for the next batch, with appenders whose
   * rows are flushed into it every {@link SUB_FLUSH} records: records go straight into DuckDB (issue #7:
   * held as JS objects until the batch committed, they were promoted to V8's old generation and kept the
   * heap ~100 MiB), and a batch can span whole DuckDB row groups, which are written compressed to the file
   * instead of through the WAL (10k-row batches cost ~2x the CPU of 131k-row ones, measured).
   */
  private direct: { rows: DuckDBAppender; seen: DuckDBAppender; unflushed: number } | null = null;
  private inTransaction = false;

  /**
   * @param rawMaxBytes raw text kept per reject (bytes); longer text is cut and flagged
   */
  constructor(
    private readonly connection: DuckDBConnection,
    private readonly runId: string,
    private readonly source: string,
    private readonly rawMaxBytes: number,
    /** Sequence number to continue from when resuming a run (staged rows already hold 0..seq-1). */
    startSeq = 0,
    startBatch = 0,
  ) {
    this.seq = startSeq;
    this.batch = startBatch;
  }

  /** Buffered records not yet committed. */
  get pending(): number {
    return this.buffered;
  }

  /** Next staging sequence number (valid records so far, across resumes). */
  get nextSeq(): number {
    return this.seq;
  }

  /** Buffers one valid report with its content hash and, when known, the hash of its raw line. */
  add(report: Report, hash: string, location: RecordLocation, lineHash?: bigint): void {
    this.buffered++;
    const d = this.direct;
    if (d) {
      appendStaged(d.rows, this.runId, this.seq++, report, hash, location, lineHash);
      if (++d.unflushed >= SUB_FLUSH) this.subFlush(d);
    } else {
      this.rows.push({ seq: this.seq++, report, hash, location, lineHash });
    }
  }

  /** Buffers a known line (its report is current and unchanged): only its hash is staged. */
  seen(lineHash: bigint): void {
    this.buffered++;
    const d = this.direct;
    if (d) {
      appendSeen(d.seen, this.runId, this.seq++, lineHash);
      if (++d.unflushed >= SUB_FLUSH) this.subFlush(d);
    } else {
      this.seenSeq.push(this.seq++);
      this.seenHash.push(lineHash);
    }
  }

  /** Buffers one rejected record. */
  reject(reject: Reject): void {
    this.buffered++;
    this.rejects.push(reject);
  }

  /**
   * Commits the buffered rows, rejects, a checkpoint and `counters` in one transaction, then opens the next
   * batch's. Rolls back and rethrows on any failure (nothing of the batch is kept).
   */
  async flush(counters: RunCounters, checkpoint: CheckpointInfo = {}): Promise<void> {
    const c = this.connection;
    try {
      if (!this.inTransaction) {
        await c.run('BEGIN TRANSACTION');
        this.inTransaction = true;
      }
      if (this.direct) this.subFlush(this.direct);
      if (this.rows.length > 0) await this.appendRows();
      if (this.seenSeq.length > 0) await this.appendSeenRows();
      if (this.rejects.length > 0) await this.appendRejects();
      this.batch += 1;
      await c.run(
        `INSERT INTO sync_checkpoints VALUES ($run, $batch, $page, $read, $loaded, $rejected, $bytes, $next, now())`,
        {
          run: this.runId,
          batch: this.batch,
          page: checkpoint.page ?? null,
          read: counters.recordsRead,
          loaded: counters.recordsLoaded,
          rejected: counters.recordsRejected,
          bytes: counters.bytesRead,
          next: checkpoint.nextUrl ?? null,
        },
      );
      await saveCounters(c, this.runId, counters);
      await c.run('COMMIT');
      this.inTransaction = false;
    } catch (err) {
      await this.close();
      throw err;
    }
    this.rows = [];
    this.seenSeq = [];
    this.seenHash = [];
    this.rejects = [];
    this.buffered = 0;
    await this.open();
  }

  /**
   * Opens the first batch's transaction and appenders, so records go straight into DuckDB from the first
   * one (without it, the first batch is held in JS until its {@link flush}). Call before reading.
   */
  async open(): Promise<void> {
    if (this.direct) return;
    const c = this.connection;
    if (!this.inTransaction) {
      await c.run('BEGIN TRANSACTION');
      this.inTransaction = true;
    }
    this.direct = {
      rows: await c.createAppender('staging_reports'),
      seen: await c.createAppender('staging_seen'),
      unflushed: 0,
    };
  }

  /**
   * Ends the writer: drops what its appenders hold and rolls back the open batch transaction (records
   * added since the last {@link flush} are not kept). Call when reading ends, after the last flush and
   * before the merge, and on failure. Idempotent; the next {@link flush} starts over.
   */
  async close(): Promise<void> {
    const d = this.direct;
    this.direct = null;
    for (const appender of d ? [d.rows, d.seen] : []) {
      try {
        appender.clear();
        appender.closeSync();
      } catch {
        // an appender left in error by a failed flush has nothing to keep
      }
    }
    if (this.inTransaction) {
      this.inTransaction = false;
      await this.connection.run('ROLLBACK').catch(() => undefined);
    }
  }

  /** Moves the appenders' rows into the open batch transaction (DuckDB buffers them, spilling if needed). */
  private subFlush(d: NonNullable<StagingWriter['direct']>): void {
    d.rows.flushSync();
    d.seen.flushSync();
    d.unflushed = 0;
  }

  /** Drops everything this run staged (used when an export restarts from its beginning). */
  async discard(): Promise<void> {
    await this.close();
    this.buffered = 0;
    this.rows = [];
    this.seenSeq = [];
    this.seenHash = [];
    this.rejects = [];
    this.seq = 0;
    this.batch = 0;
    const c = this.connection;
    await c.run('BEGIN TRANSACTION');
    await c.run('DELETE FROM staging_reports WHERE run_id = $run', { run: this.runId });
    await c.run('DELETE FROM staging_seen WHERE run_id = $run', { run: this.runId });
    await c.run('DELETE FROM rejected_records WHERE run_id = $run', { run: this.runId });
    await c.run('DELETE FROM sync_checkpoints WHERE run_id = $run', { run: this.runId });
    await c.run('COMMIT');
  }

  private async appendRows(): Promise<void> {
    const appender = await this.connection.createAppender('staging_reports');
    try {
      for (const { seq, report, hash, location, lineHash } of this.rows) {
        appendStaged(appender, this.runId, seq, report, hash, location, lineHash);
      }
      appender.flushSync();
    } finally {
      appender.closeSync();
    }
  }

  private async appendSeenRows(): Promise<void> {
    const appender = await this.connection.createAppender('staging_seen');
    try {
      for (let i = 0; i < this.seenSeq.length; i++) {
        appendSeen(appender, this.runId, this.seenSeq[i]!, this.seenHash[i]!);
      }
      appender.flushSync();
    } finally {
      appender.closeSync();
    }
  }

  private async appendRejects(): Promise<void> {
    const appender = await this.connection.createAppender('rejected_records');
    const now = new Date().toISOString();
    try {
      for (const r of this.rejects) {
        const fullBytes = r.rawBytes ?? Buffer.byteLength(r.raw);
        const cut = fullBytes > this.rawMaxBytes || r.rawTruncated === true;
        const raw = Buffer.byteLength(r.raw) > this.rawMaxBytes ? cutUtf8(r.raw, this.rawMaxBytes) : r.raw;
        appender.appendVarchar(this.runId);
        appender.appendVarchar(this.source);
        appender.appendVarchar(formatLocation(r.location));
        appender.appendBigInt(BigInt(r.location.line));
        appendNumber(appender, r.location.page ?? null, true);
        if (r.location.row === undefined) appender.appendNull();
        else appender.appendBigInt(BigInt(r.location.row));
        appendText(appender, r.recordId ?? null);
        appender.appendVarchar(raw);
        appender.appendBoolean(cut);
        appender.appendBigInt(BigInt(fullBytes));
        appender.appendVarchar(JSON.stringify(r.issues));
        appender.appendVarchar(now);
        appender.endRow();
      }
      appender.flushSync();
    } finally {
      appender.closeSync();
    }
  }
}

// Records an appender holds before they move into the batch transaction (DuckDB's appender would flush on
// its own past 204,800 rows).
const SUB_FLUSH = 8_192;

function appendStaged(
  appender: DuckDBAppender,
  runId: string,
  seq: number,
  r: Report,
  hash: string,
  location: RecordLocation,
  lineHash: bigint | undefined,
): void {
  appender.appendVarchar(runId);
  appender.appendBigInt(BigInt(seq));
  appender.appendVarchar(formatLocation(location));
  appender.appendVarchar(r.id);
  appender.appendVarchar(r.status);
  appender.appendVarchar(r.destination);
  appendText(appender, r.category);
  appendText(appender, r.description);
  appendNumber(appender, r.lat);
  appendNumber(appender, r.lng);
  appendText(appender, r.address);
  // Strings are cast by DuckDB to TIMESTAMPTZ/JSON: faster than building typed JS values (issue #7).
  appender.appendVarchar(r.createdAt);
  appender.appendVarchar(r.updatedAt);
  appendText(appender, r.extra === null ? null : JSON.stringify(r.extra));
  appender.appendVarchar(hash);
  if (lineHash === undefined) appender.appendNull();
  else appender.appendBigInt(lineHash);
  appender.endRow();
}

function appendSeen(appender: DuckDBAppender, runId: string, seq: number, lineHash: bigint): void {
  appender.appendVarchar(runId);
  appender.appendBigInt(BigInt(seq));
  appender.appendBigInt(lineHash);
  appender.endRow();
}

function appendText(appender: DuckDBAppender, value: string | null): void {
  if (value === null) appender.appendNull();
  else appender.appendVarchar(value);
}

function appendNumber(appender: DuckDBAppender, value: number | null, integer = false): void {
  if (value === null) appender.appendNull();
  else if (integer) appender.appendInteger(value);
  else appender.appendDouble(value);
}

/** Cuts a string to at most `maxBytes` UTF-8 bytes without splitting a character. */
export function cutUtf8(text: string, maxBytes: number): string {
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= maxBytes) return text;
  let end = maxBytes;
  while (end > 0 && (buf[end]! & 0xc0) === 0x80) end--;
  return buf.subarray(0, end).toString('utf8');
}

import type { Dispatcher } from 'undici';
import type { Config } from '../config/config.js';
import type { KnownLines } from '../normalize/known-lines.js';
import type { DecodedBlock } from '../normalize/reject.js';
import type { Logger } from '../util/logger.js';

/** Marks the end of a unit the runner commits as one checkpoint (a CSV page). */
export interface CheckpointMark {
  kind: 'checkpoint';
  page: number;
  /** Where a resumed run continues, when known. */
  nextUrl?: string | undefined;
}

/** Records decoded together (an NDJSON block, a CSV page): the one form in which records reach the runner. */
export interface BlockItem {
  kind: 'block';
  block: DecodedBlock;
}

/** The export answered (after redirects): its URL and validator, for resume and the run log. */
export interface ExportAnswered {
  kind: 'export';
  info: ExportInfo;
}

/**
 * Body bytes read since the previous such event: `read` as decoded (what the extractor reads,
 * `sync_runs.bytes_read`), `wire` as they came over the wire (compressed when the body was,
 * `sync_runs.bytes_wire`).
 */
export interface BytesRead {
  kind: 'bytes';
  read: number;
  wire?: number | undefined;
}

/**
 * The export's first request answered `304 Not Modified` to {@link ReadContext.conditional}: it is the
 * version the last complete run read. The source yields nothing after it and the run ends as unchanged
 * (sync/conditional.ts). `url`: the export's URL, without secrets.
 */
export interface NotModified {
  kind: 'not-modified';
  url: string;
}

/**
 * What a source yields while it reads: blocks of records, its answer (or that it is unchanged), bytes, and
 * a paged source's page ends.
 */
export type SourceItem = BlockItem | ExportAnswered | NotModified | BytesRead | CheckpointMark;

/**
 * How a source's read ended (what its generator returns; returning nothing means complete).
 * - `complete: false`: the source stopped before the end of the export (e.g. the server ignored `page`):
 *   what was read is still merged, but no tombstones are inferred (docs/how-a-sync-works.md); `reason` says why.
 * - `complete: true` with `tombstonesBlocked`: read to its end, but it cannot be proven to be one version
 *   (a paged export without a validator): merged and complete, no tombstones; the reason goes to
 *   `sync_runs.tombstones_note`.
 */
export type ReadOutcome =
  { complete: true; tombstonesBlocked?: string | undefined } | { complete: false; reason: string };

/** What a source reports about the export it reads. */
export interface ExportInfo {
  /** URL that answered (without secrets). */
  url: string;
  /** The export's validator, for resume and the run log. */
  etag?: string | undefined;
  lastModified?: string | undefined;
  /**
   * The `Age` (s) of the export's first answer when a cache served it: the merge then weighs its copies
   * against the stored versions (warehouse/merge-batch.ts `older`).
   */
  cacheAge?: number | undefined;
}

/** What a source reads with; provided by the runner. */
export interface ReadContext {
  config: Config;
  dispatcher: Dispatcher;
  logger: Logger;
  signal?: AbortSignal | undefined;
  /**
   * Raw-line hashes of the current reports: a source hashes each record's raw text with it and
   * yields lines it knows as `known` without parsing them. Absent: parse everything.
   */
  knownLines?: KnownLines | undefined;
  /**
   * The upstream `/stats` total, fetched at most once per run (the same body the run's stats snapshot then
   * keeps); `undefined` when it failed or has no numeric `total`. Absent when the run takes no stats.
   */
  upstreamTotal?: (() => Promise<number | undefined>) | undefined;
  /**
   * Headers of a conditional request (`If-None-Match`, `If-Modified-Since`) for the export's first request,
   * from the last complete run of the same export; absent when the run is not conditional (no such run,
   * `REPORTS_CONDITIONAL_EXPORTS=false`, a resumed run). A `304` to it is yielded as {@link NotModified}.
   */
  conditional?: Record<string, string> | undefined;
  /**
   * An earlier attempt of this run found the export changed while it was read (`EXPORT_CHANGED`). If page
   * 1's validator changes again, it names no version that lasts a read (a tag made anew for each answer, or
   * an export regenerated faster than it is read): a paged source then reads on, as for a server that
   * validates each page, and the run infers no deletes.
   */
  validatorUnstable?: boolean | undefined;
  /**
   * Resume point of a paged source (attempt 1 only): the interrupted run's last committed `page`, where the
   * next page is (`nextUrl`), and the export validator it saw (already checked against page 1 again).
   */
  resumeFrom?:
    | {
        page: number;
        nextUrl?: string | undefined;
        /** Records read by the interrupted run up to that page. */
        rowsRead?: number | undefined;
        etag?: string | undefined;
        lastModified?: string | undefined;
      }
    | undefined;
}

/** The validator of an export: what tells one version of it from another (ETag, else Last-Modified). */
export interface ExportValidator {
  etag?: string | undefined;
  lastModified?: string | undefined;
}

/**
 * What a paged source adds (the CSV export): the runner commits its records only at its
 * {@link CheckpointMark}s (one transaction per page) and may resume an interrupted run of it.
 */
export interface PagedExport {
  /** Rows per page this run asks for; a run only resumes one with the same page size. */
  pageSize(config: Config): number;
  /** Reads the validator of page 1 now (without keeping its body), to decide whether a resume is safe. */
  probe(ctx: ReadContext): Promise<ExportValidator>;
}

/**
 * One upstream export declared as data (a stream as a small declared unit, as in the Singer SDK): how to read it from
 * the start (called again on every retry), yielding its records as decoded blocks.
 */
export interface ExportSource {
  /** `ndjson` | `csv`: stored in `sync_runs.source` and `reports.source`. */
  name: string;
  /** True when the whole export is read (a full refresh), so unseen reports may be tombstoned. */
  fullExport: boolean;
  /**
   * False when the source yields parsed values only (no raw lines to hash): the runner then does not load
   * the known line hashes of the warehouse (`ReadContext.knownLines`), ~0.5 s at 1M reports. Default true.
   */
  lineHashes?: boolean | undefined;
  /** Set for paged exports (see {@link PagedExport}). */
  paging?: PagedExport | undefined;
  /**
   * Reads the export from its start (again on every retry of the export), yielding {@link SourceItem}s in
   * body order and returning how the read ended.
   *
   * @throws SyncError for a failed read; a retryable one restarts the export (the runner's retries)
   */
  read(ctx: ReadContext): AsyncGenerator<SourceItem, ReadOutcome | void>;
}

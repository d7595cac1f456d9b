import type { ExtraLimits } from '../schema/value-rules.js';
import type { Dispatcher } from 'undici';
import type { Config } from '../config/config.js';
import type { Extracted } from '../extract/record.js';
import type { ValidationResult } from '../schema/report.js';
import type { Logger } from '../util/logger.js';
import type { KnownLines } from './known-lines.js';

/** Marks the end of a unit the runner commits as one checkpoint (a CSV page). */
export interface CheckpointMark {
  kind: 'checkpoint';
  page: number;
  /** Where a resumed run continues, when known. */
  nextUrl?: string | undefined;
}

/** What a source reports about the export it reads. */
export interface ExportInfo {
  /** URL that answered (without secrets). */
  url: string;
  /** The export's validator, for resume and the run log. */
  etag?: string | undefined;
  lastModified?: string | undefined;
}

/** Hooks a source calls while reading; provided by the runner. */
export interface ReadContext {
  config: Config;
  dispatcher: Dispatcher;
  logger: Logger;
  signal?: AbortSignal | undefined;
  /** Count body bytes as they arrive (decoded: what the extractor reads). */
  addBytes(n: number): void;
  /** Count body bytes as they came over the wire (compressed, when the body was; `sync_runs.bytes_wire`). */
  addWireBytes(n: number): void;
  /** Called once the export answered (after redirects). */
  setExportInfo(info: ExportInfo): void;
  /**
   * Raw-line hashes of the current reports: a source hashes each record's raw text with it and
   * yields lines it knows as `known` without parsing them. Absent: parse everything.
   */
  knownLines?: KnownLines | undefined;
  /**
   * Called when the source stops before the end of the export (e.g. the server ignored `page`): what was
   * read is still merged, but the run is not complete, so no tombstones are inferred (DESIGN.md §6).
   */
  markIncomplete(reason: string): void;
  /**
   * Called when the export was read to its end but cannot be proven to be one version of it (a paged
   * export without a validator, or pages without a common one): what was read is merged and the run is
   * complete, but no tombstones are inferred; `reason` goes to `sync_runs.tombstones_note`.
   */
  blockTombstones(reason: string): void;
  /**
   * The upstream `/stats` total, fetched at most once per run (the same body the run's stats snapshot then
   * keeps); `undefined` when it failed or has no numeric `total`. Absent when the run takes no stats.
   */
  upstreamTotal?: (() => Promise<number | undefined>) | undefined;
  /**
   * Headers of a conditional request (`If-None-Match`, `If-Modified-Since`) for the export's first request,
   * from the last complete run of the same export; absent when the run is not conditional (no such run,
   * `REPORTS_CONDITIONAL_EXPORTS=false`, a resumed run).
   */
  conditional?: Record<string, string> | undefined;
  /**
   * Called when the first request answered `304 Not Modified` to {@link conditional}: the source then
   * yields nothing and the run ends as unchanged (sync/conditional.ts). `url`: the export's URL, without secrets.
   */
  markNotModified(url: string): void;
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
 * One upstream export declared as data (STYLE.md: a stream is a small declared unit): how to read it from
 * the start (called again on every retry), and how to validate one of its values into a Report.
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
  read(ctx: ReadContext): AsyncIterable<Extracted | CheckpointMark>;
  /**
   * Validates one value (a single record the source did not decode in a block) against its raw text, with
   * unknown fields within `limits`.
   */
  validate(value: unknown, raw: string, limits: ExtraLimits): ValidationResult;
}

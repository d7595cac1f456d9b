import Cursor from 'pg-cursor';
import { escapeIdentifier, type ClientBase } from 'pg';
import type { Report } from '../../schema/wire-format.js';
import type { ReportFilter } from '../report-rows.js';
import { rowToReport } from '../report-rows.js';
import type { Validators } from '../validators.js';

/**
 * The reader's SQL on the PostgreSQL serving schema (docs/deployment.md, "Serving from PostgreSQL"):
 * parameterised statements only (values are `$n` parameters; the schema name is quoted with
 * `escapeIdentifier`). Orders are the DuckDB reader's, with `id` compared byte-wise (`COLLATE "C"`) so the
 * answers do not depend on the database's collation, and served by the indexes of migration 002.
 */

/**
 * `extra` as received: the `json` copy (its text as published), else, for a row published before that
 * column existed, the `jsonb` one (jsonb's key order) until a publish rewrites the row.
 */
const extraAsReceived = (row = '') => `coalesce(${row}extra_json, ${row}extra::json)`;

/** The columns {@link rowToReport} reads, in its order: timestamps as epoch ms, `extra` as JSON text. */
export const PG_REPORT_COLUMNS = `id, status, destination, category, description, lat, lng, address,
  trunc(extract(epoch FROM created_at) * 1000)::float8 AS created_ms,
  trunc(extract(epoch FROM updated_at) * 1000)::float8 AS updated_ms, ${extraAsReceived()}::text AS extra`;
export const PG_NEWEST_FIRST = 'created_at DESC, id COLLATE "C" ASC';
const EXPORT_ORDER = 'created_at ASC, id COLLATE "C" ASC';

/** Rows per cursor read while an export streams: memory stays at one such batch. */
const CURSOR_ROWS = 2000;

/** What the reader's answers are a function of: the last run applied by a publish (`publish_state`). */
export interface PublishedState {
  /** The run id of the last run applied, null before the first publish. */
  lastRunId: string | null;
  /** When that publish committed (epoch ms), null before the first publish. */
  publishedMs: number | null;
  /** The last applied run that changed the reports (`publish_state.served_run_id`), null when none is known. */
  servedRunId: string | null;
  /** When that run finished (epoch ms). */
  servedMs: number | null;
}

/** The {@link PublishedState} of a `publishedStateSql` row's four columns (each null when there is no row). */
export function publishedStateOf(row: readonly unknown[] | undefined): PublishedState {
  const text = (v: unknown) => (typeof v === 'string' ? v : null);
  const ms = (v: unknown) => (typeof v === 'number' ? v : null);
  return {
    lastRunId: text(row?.[0]),
    publishedMs: ms(row?.[1]),
    servedRunId: text(row?.[2]),
    servedMs: ms(row?.[3]),
  };
}

/**
 * ETag `"<run id>"` and Last-Modified of the last applied run that changed the reports, as the DuckDB reader's
 * (reader/validators.ts): a `/stats` snapshot or a run that changed nothing leaves them. A schema published
 * before that run was recorded gives the last run applied and the publish's commit; `"empty"` before the
 * first publish.
 */
export function pgValidators(state: PublishedState): Validators {
  const runId = state.servedRunId ?? state.lastRunId;
  const ms = state.servedRunId === null ? state.publishedMs : state.servedMs;
  if (runId === null || ms === null) return { etag: '"empty"' };
  return { etag: `"${runId}"`, lastModified: new Date(ms).toUTCString() };
}

/** The queries of one serving schema. */
export class PgReaderQueries {
  readonly #s: string;

  constructor(schema: string) {
    this.#s = escapeIdentifier(schema);
  }

  /** The published state the statement's snapshot sees. */
  async state(client: ClientBase): Promise<PublishedState> {
    const res = await client.query<unknown[]>({
      text: `SELECT ${PUBLISHED_STATE_COLUMNS} FROM (SELECT 1) AS one LEFT JOIN (${this.#stateSql()}) st ON true`,
      rowMode: 'array',
    });
    return publishedStateOf(res.rows[0]);
  }

  /** `/stats` groups: current reports counted by status and destination. */
  async statsGroups(client: ClientBase): Promise<Array<{ status: string; destination: string; n: number }>> {
    const res = await client.query<{ status: string; destination: string; n: number }>(
      `SELECT status, destination, count(*)::float8 AS n FROM ${this.#s}.report_rows
       WHERE removed_at IS NULL GROUP BY status, destination`,
    );
    return res.rows;
  }

  /** Current reports of `filter` (the rows the list and CSV pages go through). */
  async count(client: ClientBase, filter: ReportFilter = {}): Promise<number> {
    const params: unknown[] = [];
    const res = await client.query<[number]>({
      text: `SELECT count(*)::float8 FROM ${this.#s}.report_rows WHERE ${pgConditions(filter, params)}`,
      values: params,
      rowMode: 'array',
    });
    return res.rows[0]?.[0] ?? 0;
  }

  /**
   * The CSV export's extra columns (docs/sources.md): every key of the current reports' `extra` in
   * first-seen order along the export order, keys of one report in their order as received (the DuckDB
   * reader's columns, export-shape.ts).
   */
  async extraKeys(client: ClientBase): Promise<string[]> {
    const res = await client.query<[string]>({
      text: `SELECT key FROM (
          SELECT DISTINCT ON (k.key) k.key, r.created_at, r.id COLLATE "C" AS id, k.pos
          FROM ${this.#s}.report_rows r,
            json_object_keys(${extraAsReceived('r.')}) WITH ORDINALITY AS k(key, pos)
          WHERE r.removed_at IS NULL AND json_typeof(${extraAsReceived('r.')}) = 'object'
          ORDER BY k.key, r.created_at, r.id COLLATE "C", k.pos) firsts
        ORDER BY created_at, id, pos`,
      rowMode: 'array',
    });
    return res.rows.map((row) => row[0]);
  }

  /**
   * Streams the reports of `filter` through a server-side cursor, batch by batch (constant memory):
   * `order` newest first (GeoJSON) or export order (CSV, NDJSON); `located` keeps reports with a location;
   * `range` one page of them. Run it inside the response's REPEATABLE READ transaction.
   */
  async *stream(
    client: ClientBase,
    filter: ReportFilter,
    o: { order: 'newest' | 'oldest'; located?: boolean; range?: { offset: number; limit: number } },
  ): AsyncGenerator<Report[]> {
    const params: unknown[] = [];
    let where = pgConditions(filter, params);
    if (o.located === true) where += ' AND lat IS NOT NULL AND lng IS NOT NULL';
    let paging = '';
    if (o.range !== undefined) {
      params.push(o.range.limit, o.range.offset);
      paging = `LIMIT $${params.length - 1} OFFSET $${params.length}`;
    }
    const order = o.order === 'newest' ? PG_NEWEST_FIRST : EXPORT_ORDER;
    const text = `SELECT ${PG_REPORT_COLUMNS} FROM ${this.#s}.report_rows WHERE ${where} ORDER BY ${order} ${paging}`;
    const cursor = client.query(new Cursor<unknown[]>(text, params, { rowMode: 'array' }));
    try {
      for (;;) {
        const rows = await cursor.read(CURSOR_ROWS);
        if (rows.length === 0) return;
        yield rows.map((row) => rowToReport(row));
      }
    } finally {
      await cursor.close();
    }
  }

  #stateSql(): string {
    return publishedStateSql(this.#s);
  }
}

/** The `publish_state` row as (last_run_id, published_ms, served_run_id, served_ms) of the quoted schema `s`. */
export function publishedStateSql(s: string): string {
  return `SELECT last_run_id, trunc(extract(epoch FROM published_at) * 1000)::float8 AS published_ms,
      served_run_id, trunc(extract(epoch FROM served_at) * 1000)::float8 AS served_ms
      FROM ${s}.publish_state`;
}

/** The columns of {@link publishedStateSql} joined as `st`, in {@link publishedStateOf}'s order. */
export const PUBLISHED_STATE_COLUMNS = 'st.last_run_id, st.published_ms, st.served_run_id, st.served_ms';

/** `removed_at IS NULL` AND the filter's equalities, its values appended to `params` as `$n`. */
export function pgConditions(filter: ReportFilter, params: unknown[]): string {
  const clauses = ['removed_at IS NULL'];
  if (filter.destination !== undefined) {
    params.push(filter.destination);
    clauses.push(`destination = $${params.length}`);
  }
  if (filter.status !== undefined) {
    params.push(filter.status);
    clauses.push(`status = $${params.length}`);
  }
  return clauses.join(' AND ');
}

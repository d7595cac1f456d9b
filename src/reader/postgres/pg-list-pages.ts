import { createHash } from 'node:crypto';
import { escapeIdentifier, type ClientBase } from 'pg';
import type { Report } from '../../schema/wire-format.js';
import type { ReportFilter } from '../report-rows.js';
import { rowToReport } from '../report-rows.js';
import {
  PG_NEWEST_FIRST,
  PG_REPORT_COLUMNS,
  pgConditions,
  pgValidators,
  PUBLISHED_STATE_COLUMNS,
  publishedStateOf,
  publishedStateSql,
  type PublishedState,
} from './pg-queries.js';

/** Columns of the published state ahead of each row's own (PUBLISHED_STATE_COLUMNS). */
const STATE_WIDTH = 4;

/** The key of one report in list order: `created_at` as PostgreSQL's text (exact, with its offset), `id`. */
interface Anchor {
  at: string;
  id: string;
}

/** The anchors of one filter in one published state: `anchors[j]` is row `j × every` of the list. */
interface FilterAnchors {
  anchors: Anchor[];
  /** The anchors reach the end of the list: none is missing past the last. */
  complete: boolean;
  pending?: Promise<void> | undefined;
}

/**
 * List pages at any depth on PostgreSQL with keyset seeks (docs/deployment.md, "Serving from
 * PostgreSQL"). The list is paged by number (`page`, `pageSize`), which OFFSET serves by reading every row
 * before the page; instead the reader keeps, per published state and filter, the key of every
 * `every`-th row of the list (its anchors, read once by an index-only scan of the filter's index and
 * extended as deeper pages are asked), and reads a page by seeking to the anchor before it and skipping
 * fewer than `every` index entries. Memory: one anchor (~60 bytes) per `every` reports per filter asked.
 *
 * Consistency: the anchors and every page are read each in ONE statement with the `publish_state` row; a
 * page whose state is not the anchors' state (a publish committed meanwhile) drops the anchors and is
 * read with a plain OFFSET, so an answer is never of two states and never wrong, at worst slower.
 */
export class PgListPages {
  readonly #s: string;
  readonly #every: number;
  readonly #minExtension: number;
  #etag: string | undefined;
  #byFilter = new Map<string, FilterAnchors>();

  /**
   * @param o.every rows between two anchors (default 250: a page skips fewer index entries after its anchor)
   * @param o.minExtension anchors read at least per extension (default 64), so random deep pages build a
   *   filter's anchors in few reads
   */
  constructor(schema: string, o: { every?: number; minExtension?: number } = {}) {
    this.#s = escapeIdentifier(schema);
    this.#every = o.every ?? 250;
    this.#minExtension = o.minExtension ?? 64;
  }

  /** List page `page` (1-based) of `pageSize` reports of `filter`, newest first, and its published state. */
  async page(
    client: ClientBase,
    filter: ReportFilter,
    page: number,
    pageSize: number,
  ): Promise<{ state: PublishedState; reports: Report[] }> {
    const offset = (page - 1) * pageSize;
    const located = await this.#locate(client, filter, offset);
    if (located !== undefined) {
      const read = await this.#read(client, filter, located.skip, pageSize, located.anchor);
      if (pgValidators(read.state).etag === located.etag) return read;
      this.#reset(undefined);
    }
    return this.#read(client, filter, offset, pageSize, undefined);
  }

  /** The anchor at or before `offset` and the rows to skip after it, in the state `etag`. */
  async #locate(
    client: ClientBase,
    filter: ReportFilter,
    offset: number,
  ): Promise<{ anchor: Anchor; skip: number; etag: string } | undefined> {
    const key = JSON.stringify([filter.status ?? null, filter.destination ?? null]);
    const j = Math.floor(offset / this.#every);
    for (let attempt = 0; attempt < 2; attempt++) {
      const etag = this.#etag;
      let entry = this.#byFilter.get(key);
      if (entry === undefined) {
        entry = { anchors: [], complete: false };
        this.#byFilter.set(key, entry);
      }
      if (j >= entry.anchors.length && !entry.complete) {
        const current = entry;
        current.pending ??= this.#extend(client, filter, current, j).finally(() => {
          current.pending = undefined;
        });
        await current.pending;
        if (this.#etag !== etag) continue; // extended in another state: the map was reset
      }
      if (this.#etag === undefined) return undefined;
      // Past the last anchor of a complete list: fewer than `every` rows follow the last one, so the
      // page is read from it (an empty page costs a short seek, not a scan of the whole filter).
      const at = Math.min(j, entry.anchors.length - 1);
      const anchor = entry.anchors[at];
      if (anchor === undefined) return undefined; // an empty list
      return { anchor, skip: offset - at * this.#every, etag: this.#etag };
    }
    return undefined;
  }

  /** Reads anchors after the last one of `entry` until anchor `j` (at least `minExtension` more). */
  async #extend(client: ClientBase, filter: ReportFilter, entry: FilterAnchors, j: number): Promise<void> {
    const params: unknown[] = [];
    let where = pgConditions(filter, params);
    const last = entry.anchors.at(-1);
    if (last !== undefined) {
      params.push(last.at, last.id);
      const [at, id] = [`$${params.length - 1}::timestamptz`, `$${params.length}`];
      where += ` AND created_at <= ${at} AND (created_at < ${at} OR id COLLATE "C" > ${id})`;
    }
    const have = entry.anchors.length;
    const wanted = Math.max(j + 1 - have, this.#minExtension, have);
    // After the last anchor the next one is `every` rows on: row numbers start at 1 there, at 0 at the top.
    const first = last === undefined ? 0 : this.#every - 1;
    params.push(wanted * this.#every + first, this.#every);
    const [limit, every] = [`$${params.length - 1}`, `$${params.length}`];
    const res = await client.query<unknown[]>({
      text: `SELECT ${PUBLISHED_STATE_COLUMNS}, x.at, x.id
        FROM (SELECT 1) AS one
        LEFT JOIN (${publishedStateSql(this.#s)}) st ON true
        LEFT JOIN LATERAL (
          -- ISO 8601 in UTC whatever the session's DateStyle and TimeZone: the anchor is sent back as a parameter.
          SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at, id, n FROM (
            SELECT created_at, id, row_number() OVER (ORDER BY ${PG_NEWEST_FIRST}) - 1 AS n
            FROM ${this.#s}.report_rows WHERE ${where}
            ORDER BY ${PG_NEWEST_FIRST} LIMIT ${limit}) y
          WHERE n % ${every} = ${first}) x ON true
        ORDER BY x.n`,
      values: params,
      rowMode: 'array',
    });
    const row = res.rows[0];
    const etag = pgValidators(publishedStateOf(row)).etag;
    if (etag !== this.#etag) {
      // Anchors of another state than those kept: start over in that state.
      this.#reset(etag);
      return;
    }
    const added = res.rows
      .filter((r) => r[STATE_WIDTH] !== null)
      .map((r) => ({ at: r[STATE_WIDTH] as string, id: r[STATE_WIDTH + 1] as string }));
    entry.anchors.push(...added);
    if (added.length < wanted) entry.complete = true;
  }

  #reset(etag: string | undefined): void {
    this.#etag = etag;
    this.#byFilter = new Map();
  }

  /**
   * One statement: the published state and `limit` reports of `filter` after skipping `skip` from
   * `anchor` (or from the top). The first row of the page is found on the filter's index alone (an
   * index-only scan skips entries, not table rows), then only the page's rows are read from the table.
   */
  async #read(
    client: ClientBase,
    filter: ReportFilter,
    skip: number,
    limit: number,
    anchor: Anchor | undefined,
  ): Promise<{ state: PublishedState; reports: Report[] }> {
    const params: unknown[] = [skip, limit];
    const where = pgConditions(filter, params);
    let from = '';
    if (anchor !== undefined) {
      params.push(anchor.at, anchor.id);
      const [at, id] = [`$${params.length - 1}::timestamptz`, `$${params.length}`];
      from = ` AND created_at <= ${at} AND (created_at < ${at} OR id COLLATE "C" >= ${id})`;
    }
    const r = `${this.#s}.report_rows`;
    const text = `WITH first AS (
          SELECT created_at, id FROM ${r} WHERE ${where}${from}
          ORDER BY ${PG_NEWEST_FIRST} OFFSET $1 LIMIT 1)
        SELECT ${PUBLISHED_STATE_COLUMNS}, p.*
        FROM (SELECT 1) AS one
        LEFT JOIN (${publishedStateSql(this.#s)}) st ON true
        LEFT JOIN LATERAL (
          SELECT ${PG_REPORT_COLUMNS}, created_at AS order_at FROM ${r}
          WHERE ${where} AND created_at <= (SELECT created_at FROM first)
            AND (created_at < (SELECT created_at FROM first) OR id COLLATE "C" >= (SELECT id FROM first))
          ORDER BY ${PG_NEWEST_FIRST} LIMIT $2
        ) p ON true
        ORDER BY p.order_at DESC, p.id COLLATE "C"`;
    // Named: prepared once per connection and filter shape, so a page is not planned again each time.
    const res = await client.query<unknown[]>({
      name: statementName(text),
      text,
      values: params,
      rowMode: 'array',
    });
    const state = publishedStateOf(res.rows[0]);
    const reports = res.rows
      .filter((row) => row[STATE_WIDTH] !== null)
      .map((row) => rowToReport(row.slice(STATE_WIDTH)));
    return { state, reports };
  }
}

/** A prepared statement's name for `text` (the same text, the same name, on every connection). */
function statementName(text: string): string {
  return `reader-page-${createHash('sha1').update(text).digest('hex').slice(0, 16)}`;
}

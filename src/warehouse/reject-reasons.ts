import type { DuckDBConnection } from '@duckdb/node-api';

/**
 * One group of quarantined records: those whose first issue has this `path` and `code`
 * (schema/record-issue.ts), however their messages differ (a parser's message quotes a position, a
 * value). `records` counts records, each in one group only, so the groups of a run add up to its
 * `records_rejected`.
 */
export interface RejectReason {
  /** The field the first issue is about (dotted); empty for the record as a whole. */
  path: string;
  /** The issue code (`too_big`, `invalid_timestamp`, `malformed_json`, …); the message itself for a record quarantined before issues carried codes. */
  code: string;
  /** Records in the group. */
  records: number;
  /** The group's most frequent message, as an example. */
  message: string;
  /** `path: message` (`(record): message` for the record as a whole), the line people read. */
  reason: string;
  /** The first locations in export order (`line 9`, `page 3, row 17, line 40`), at most `locations`. */
  locations: string[];
  /** The run that quarantined the group's latest record, and where that record was. */
  lastRunId: string;
  lastLocation: string;
  /**
   * The first records' raw text, cut to `exampleChars` characters (`base64` when their bytes were not
   * UTF-8, see `rejected_records.raw_encoding`), at most `examples`; empty unless asked for.
   */
  examples: { location: string; raw: string; encoding: string; truncated: boolean }[];
  /**
   * The group's records' later issues (after the first), by path and code, most records first: what else
   * must change before they load (a record with the wrong `destination` may also have a zone-less
   * `createdAt`). `records` counts records of the group with that issue.
   */
  alsoIssues: { path: string; code: string; records: number }[];
}

/** Options of {@link rejectReasons}. */
export interface RejectReasonOptions {
  /** Only this run's rejects (default: the whole quarantine). */
  runId?: string | undefined;
  /** At most this many groups, largest first (default: all). */
  limit?: number | undefined;
  /** Locations listed per group (default 3). */
  locations?: number | undefined;
  /** Raw examples per group (default 0). */
  examples?: number | undefined;
  /** Characters of raw text kept per example (default 240). */
  exampleChars?: number | undefined;
}

/**
 * The quarantine (`rejected_records`) grouped by the path and code of each record's first issue, largest
 * group first: the one grouping of reject reasons that the sync summary, `sync --json` and the status page
 * show, so they agree. Bounded output: one row per group.
 *
 * @throws what DuckDB throws (a warehouse without `rejected_records`: not migrated)
 */
export async function rejectReasons(
  connection: DuckDBConnection,
  options: RejectReasonOptions = {},
): Promise<RejectReason[]> {
  const where = options.runId === undefined ? '' : 'WHERE run_id = $run';
  const limit = options.limit === undefined ? '' : `LIMIT ${Math.max(0, Math.floor(options.limit))}`;
  const shown = Math.max(1, Math.floor(options.locations ?? 3));
  const examples = Math.max(0, Math.floor(options.examples ?? 0));
  const chars = Math.max(1, Math.floor(options.exampleChars ?? 240));
  const rows = (
    await connection.runAndReadAll(
      `WITH firsts AS (
         SELECT run_id, location, page, line, rejected_at, raw, raw_truncated, raw_encoding,
                coalesce(issues->>'$[0].path', '') AS path,
                coalesce(issues->>'$[0].message', 'invalid') AS message,
                coalesce(issues->>'$[0].code', issues->>'$[0].message', 'invalid') AS code
         FROM rejected_records ${where})
       SELECT path, code, count(*)::DOUBLE AS records, mode(message) AS message,
              list_slice(list(location ORDER BY page NULLS FIRST, line, location), 1, ${shown}) AS locations,
              arg_max(run_id, rejected_at) AS last_run, arg_max(location, rejected_at) AS last_location,
              ${
                examples === 0
                  ? '[]'
                  : `list_slice(list({'location': location, 'raw': left(raw, ${chars}),
                      'encoding': coalesce(raw_encoding, 'text'), 'truncated': raw_truncated OR length(raw) > ${chars}}
                      ORDER BY page NULLS FIRST, line, location), 1, ${examples})`
              } AS examples
       FROM firsts GROUP BY path, code ORDER BY records DESC, path, code ${limit}`,
      options.runId === undefined ? undefined : { run: options.runId },
    )
  ).getRowObjectsJS();
  const also = await laterIssues(connection, where, options.runId);
  return rows.map((r) => {
    const path = String(r.path);
    const message = String(r.message);
    return {
      path,
      code: String(r.code),
      records: Number(r.records),
      message,
      reason: `${path === '' ? '(record)' : path}: ${message}`,
      locations: (r.locations as unknown[]).map(String),
      lastRunId: String(r.last_run),
      lastLocation: String(r.last_location),
      examples: (r.examples as Record<string, unknown>[]).map((e) => ({
        location: String(e.location),
        raw: String(e.raw),
        encoding: String(e.encoding),
        truncated: e.truncated === true,
      })),
      alsoIssues: also.get(`${path}\u0000${String(r.code)}`) ?? [],
    };
  });
}

/** Per first issue (`path` NUL `code`), the later issues of its records ({@link RejectReason.alsoIssues}). */
async function laterIssues(
  connection: DuckDBConnection,
  where: string,
  runId: string | undefined,
): Promise<Map<string, RejectReason['alsoIssues']>> {
  const rows = (
    await connection.runAndReadAll(
      `WITH r AS (
         SELECT run_id, location, coalesce(issues->>'$[0].path', '') AS path,
                coalesce(issues->>'$[0].code', issues->>'$[0].message', 'invalid') AS code,
                json_extract(issues, '$[*]') AS all_issues
         FROM rejected_records ${where}),
       later AS (
         SELECT run_id, location, path, code, coalesce(i->>'path', '') AS other_path,
                coalesce(i->>'code', i->>'message', 'invalid') AS other_code
         FROM r, unnest(all_issues[2:]) AS t(i))
       SELECT path, code, other_path, other_code, count(DISTINCT (run_id, location))::DOUBLE AS records
       FROM later WHERE (other_path, other_code) <> (path, code)
       GROUP BY ALL ORDER BY records DESC, other_path, other_code`,
      runId === undefined ? undefined : { run: runId },
    )
  ).getRowObjectsJS();
  const byFirst = new Map<string, RejectReason['alsoIssues']>();
  for (const row of rows) {
    const key = `${String(row.path)}\u0000${String(row.code)}`;
    const list = byFirst.get(key) ?? [];
    list.push({ path: String(row.other_path), code: String(row.other_code), records: Number(row.records) });
    byFirst.set(key, list);
  }
  return byFirst;
}

/** A group's later issues as one line: `createdAt invalid_timestamp 100; …` (empty when none). */
export function alsoIssuesText(also: RejectReason['alsoIssues']): string {
  return also
    .map((a) => `${a.path === '' ? '(record)' : a.path} ${a.code} ${a.records.toLocaleString('en-US')}`)
    .join('; ');
}

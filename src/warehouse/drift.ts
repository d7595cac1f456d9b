import type { DuckDBConnection } from '@duckdb/node-api';

/**
 * Kinds of schema drift (see docs/sources.md):
 * - `new_value`: a `status` or `destination` value never seen before;
 * - `new_field`: an unknown field (one that lands in `extra`) never seen before;
 * - `type_changed`: a known unknown field arrived with a JSON type it never had (null counts as no type);
 * - `field_gone`: no current report carries an unknown field any more.
 */
export type DriftKind = 'new_value' | 'new_field' | 'type_changed' | 'field_gone';

/** One drift a run saw; `count` is the records of the run that carry it (the closed versions for `field_gone`). */
export interface DriftEvent {
  kind: DriftKind;
  field: string;
  /** The new value or the field's new JSON type(s); `null` for `field_gone`. */
  value: string | null;
  count: number;
}

/** What {@link detectDrift} found: the events, and the catalog rows the run adds when it merges. */
export interface DriftDetection {
  events: DriftEvent[];
  /** New catalog entries (kind, field, value) of this run, events or baseline. */
  additions: { kind: 'value' | 'field'; format: string; field: string; value: string }[];
  /** True when this run sets the baseline (the first run of its kind): nothing is reported. */
  baseline: { values: boolean; fields: boolean };
}

/** The catalog format of a source's fields: CSV cells are all strings, so CSV types are kept apart. */
export function driftFormat(source: string): 'json' | 'csv' {
  return source === 'csv' ? 'csv' : 'json';
}

const REPORT_SOURCES = `('ndjson', 'csv', 'recent')`;
// DuckDB's json_each types, as JSON types: an integer and a decimal are both numbers.
const JSON_TYPE = `CASE WHEN j.type IN ('BIGINT', 'UBIGINT', 'DOUBLE', 'HUGEINT') THEN 'number'
  WHEN j.type = 'VARCHAR' THEN 'string' ELSE lower(j.type) END`;

/**
 * Compares the run's staged records (`staging_reports`: every record that is new or changed; lines known
 * unchanged cannot carry anything new) with `drift_catalog`. Read-only: call before the merge (a frozen
 * schema contract fails the run on its events), then {@link recordDrift} inside the merge transaction.
 *
 * The first run of a warehouse (no succeeded run of a report source) sets the value baseline, and the
 * first of a format (JSON sources, CSV) its field baseline, without events. An upgraded warehouse's
 * baseline is what it held (migration 005).
 */
export async function detectDrift(
  connection: DuckDBConnection,
  run: { runId: string; source: string },
): Promise<DriftDetection> {
  const format = driftFormat(run.source);
  const rows = async (sql: string, params: Record<string, string> = {}) =>
    (await connection.runAndReadAll(sql, params)).getRowObjectsJS();
  const [prior] = await rows(
    `SELECT count(*) FILTER (WHERE source IN ${REPORT_SOURCES})::INTEGER AS any_source,
            count(*) FILTER (WHERE source IN (${format === 'csv' ? `'csv'` : `'ndjson', 'recent'`}))::INTEGER AS same_format
     FROM sync_runs WHERE status = 'succeeded'`,
  );
  const baseline = { values: Number(prior?.any_source) === 0, fields: Number(prior?.same_format) === 0 };
  const values = await rows(
    `SELECT 'status' AS field, status AS value, count(*)::INTEGER AS n FROM staging_reports WHERE run_id = $run GROUP BY ALL
     UNION ALL
     SELECT 'destination', destination, count(*)::INTEGER FROM staging_reports WHERE run_id = $run GROUP BY ALL`,
    { run: run.runId },
  );
  const fields = await rows(
    `SELECT j.key AS field, ${JSON_TYPE} AS type, count(*)::INTEGER AS n
     FROM staging_reports s, json_each(s.extra) j
     WHERE s.run_id = $run AND s.extra IS NOT NULL GROUP BY ALL ORDER BY 1, 2`,
    { run: run.runId },
  );
  const catalog = await rows(
    `SELECT kind, field, value FROM drift_catalog WHERE kind = 'value' OR (kind = 'field' AND format = $format)`,
    { format },
  );
  const detection: DriftDetection = { events: [], additions: [], baseline };
  compareValues(values, catalog, detection);
  compareFields(fields, catalog, format, detection);
  return detection;
}

type Row = Record<string, unknown>;

/** New `status`/`destination` values (rows: field, value, n) against the catalog, into `out`. */
function compareValues(values: Row[], catalog: Row[], out: DriftDetection): void {
  const knownValues = new Set(
    catalog.filter((c) => c.kind === 'value').map((c) => `${String(c.field)}\u0000${String(c.value)}`),
  );
  for (const v of values) {
    const field = String(v.field);
    const value = String(v.value);
    if (knownValues.has(`${field}\u0000${value}`)) continue;
    out.additions.push({ kind: 'value', format: '', field, value });
    if (!out.baseline.values) out.events.push({ kind: 'new_value', field, value, count: Number(v.n) });
  }
}

/** New unknown fields and new JSON types of known ones (rows: field, type, n) against the catalog, into `out`. */
function compareFields(fields: Row[], catalog: Row[], format: string, out: DriftDetection): void {
  const knownTypes = groupBy(
    catalog.filter((c) => c.kind === 'field'),
    (c) => String(c.value),
  );
  const byField = groupBy(fields, (f) => ({ type: String(f.type), n: Number(f.n) }));
  for (const [field, types] of byField) {
    const known = knownTypes.has(field) ? new Set(knownTypes.get(field)) : undefined;
    const fresh = types.filter((t) => !known?.has(t.type));
    for (const t of fresh) out.additions.push({ kind: 'field', format, field, value: t.type });
    if (out.baseline.fields || fresh.length === 0) continue;
    if (known === undefined) {
      const value = types.map((t) => t.type).join('|');
      out.events.push({ kind: 'new_field', field, value, count: types.reduce((a, t) => a + t.n, 0) });
      continue;
    }
    // A field seen only as null so far gets its first real type: not a change.
    const hadType = [...known].some((t) => t !== 'null');
    for (const t of fresh) {
      if (t.type !== 'null' && hadType)
        out.events.push({ kind: 'type_changed', field, value: t.type, count: t.n });
    }
  }
}

/** Rows grouped by their `field` column, in first-seen order, each mapped by `item`. */
function groupBy<T>(rows: Row[], item: (row: Row) => T): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const row of rows) {
    const list = groups.get(String(row.field)) ?? [];
    list.push(item(row));
    groups.set(String(row.field), list);
  }
  return groups;
}

/**
 * Records a run's drift inside its merge transaction, after the merge and the tombstones: the events of
 * {@link detectDrift} in `drift_events`, its additions in `drift_catalog`, and `field_gone` for each
 * catalogued field that a version closed by this run carried and no current report carries any more (the
 * field leaves the catalog, so its return is a `new_field` again). Returns every event of the run.
 */
export async function recordDrift(
  connection: DuckDBConnection,
  run: { runId: string; source: string; now: Date },
  detection: DriftDetection,
): Promise<DriftEvent[]> {
  const now = run.now.toISOString();
  for (const a of detection.additions) {
    await connection.run(
      `INSERT INTO drift_catalog VALUES ($kind, $format, $field, $value, $now::TIMESTAMPTZ, $run)`,
      { ...a, now, run: run.runId },
    );
  }
  const gone = await goneFields(connection, now);
  for (const g of gone) {
    await connection.run(`DELETE FROM drift_catalog WHERE kind = 'field' AND field = $field`, {
      field: g.field,
    });
  }
  const events = [...detection.events, ...gone];
  await insertEvents(connection, run, events);
  return events;
}

/** Writes events to `drift_events` (also for a run that fails on them: they explain why). */
export async function insertEvents(
  connection: DuckDBConnection,
  run: { runId: string; source: string; now: Date },
  events: readonly DriftEvent[],
): Promise<void> {
  for (const e of events) {
    await connection.run(
      `INSERT INTO drift_events VALUES ($run, $source, $kind, $field, $value, $now::TIMESTAMPTZ, $count)`,
      {
        run: run.runId,
        source: run.source,
        kind: e.kind,
        field: e.field,
        value: e.value,
        now: run.now.toISOString(),
        count: e.count,
      },
    );
  }
}

/**
 * Catalogued fields carried by a version this run closed (`valid_to = now`: updated, revived or removed
 * reports) and by no current report now. Only fields of changed reports can vanish, so the current reports
 * are searched for those few fields only, each search stopping at its first hit.
 */
async function goneFields(connection: DuckDBConnection, now: string): Promise<DriftEvent[]> {
  const candidates = (
    await connection.runAndReadAll(
      `SELECT j.key AS field, count(*)::INTEGER AS n
       FROM report_versions_closed v, json_each(v.extra) j
       WHERE v.valid_to = $now::TIMESTAMPTZ AND v.extra IS NOT NULL
         AND j.key IN (SELECT field FROM drift_catalog WHERE kind = 'field')
       GROUP BY ALL`,
      { now },
    )
  ).getRowObjectsJS();
  const gone: DriftEvent[] = [];
  for (const c of candidates) {
    const still = (
      await connection.runAndReadAll(
        `SELECT 1 FROM reports WHERE removed_at IS NULL AND extra IS NOT NULL
           AND list_contains(json_keys(extra), $field) LIMIT 1`,
        { field: String(c.field) },
      )
    ).getRowsJS();
    if (still.length === 0)
      gone.push({ kind: 'field_gone', field: String(c.field), value: null, count: Number(c.n) });
  }
  return gone;
}

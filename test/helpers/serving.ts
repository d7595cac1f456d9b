import type { DuckDBConnection, DuckDBValue } from '@duckdb/node-api';
import { expect } from 'vitest';
import { readExportShape } from '../../src/reader/export-shape.js';
import type { PageOrder } from '../../src/reader/page-windows.js';
import {
  EXPORT_ORDER_SQL,
  NEWEST_FIRST_SQL,
  REPORT_COLUMNS_SQL,
  reportWhere,
  rowToReport,
  type ReportFilter,
} from '../../src/reader/report-rows.js';
import { readExtraKeys } from '../../src/warehouse/serving-extra-keys.js';
import { bucketSql, readServingMeta } from '../../src/warehouse/serving-index.js';

/** A row of {@link REPORT_COLUMNS_SQL} as the report JSON the reader answers. */
export function show(row: readonly DuckDBValue[]): string {
  return JSON.stringify(rowToReport(row));
}

/** Rows of the plain query over the `reports` view: the whole filter ordered, then OFFSET/LIMIT. */
export async function offsetRows(
  c: DuckDBConnection,
  filter: ReportFilter,
  order: PageOrder,
  offset: number,
  limit: number | undefined,
  extraWhere?: string,
): Promise<string[]> {
  const where = reportWhere(filter);
  const sql = `SELECT ${REPORT_COLUMNS_SQL} FROM reports ${where.sql} ${extraWhere ? `AND ${extraWhere}` : ''}
    ORDER BY ${order === 'newest' ? NEWEST_FIRST_SQL : EXPORT_ORDER_SQL}
    ${limit === undefined ? '' : `LIMIT ${limit} OFFSET ${offset}`}`;
  return (await c.runAndReadAll(sql, where.params)).getRows().map(show);
}

/** The serving index is built and holds exactly what a full recount of the current reports gives. */
export async function expectIndexExact(c: DuckDBConnection): Promise<void> {
  const { bucketUs } = await readServingMeta(c);
  expect(bucketUs).not.toBeNull();
  const recount = await c.runAndReadAll(
    `SELECT status, destination, ${bucketSql('created_at', bucketUs!)} AS bucket, count(*)::BIGINT AS n
     FROM reports WHERE removed_at IS NULL GROUP BY ALL ORDER BY ALL`,
  );
  const kept = await c.runAndReadAll(
    'SELECT status, destination, bucket, reports FROM reader_page_counts ORDER BY ALL',
  );
  expect(kept.getRowsJS()).toEqual(recount.getRowsJS());
  expect(await readExtraKeys(c)).toEqual((await readExportShape(c, 10_000)).extraColumns);
  // The recent rows are exactly the current reports last changed after the split, as they are now.
  const columns =
    'id, status, destination, category, description, lat, lng, address, created_at, updated_at, extra::VARCHAR';
  const recent = await c.runAndReadAll(`SELECT ${columns} FROM reader_page_recent ORDER BY id`);
  const expected = await c.runAndReadAll(
    `SELECT ${columns} FROM report_rows
     WHERE removed_at IS NULL AND last_changed_at > (SELECT split_at FROM reader_serving) ORDER BY id`,
  );
  expect(recent.getRowsJS()).toEqual(expected.getRowsJS());
}

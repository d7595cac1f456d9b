import type { DuckDBConnection } from '@duckdb/node-api';

/** Every stored row of `report_rows`, all columns, as sorted text: the table's content, not its order. */
export async function storedContent(c: DuckDBConnection): Promise<string[]> {
  const rows = await c.runAndReadAll(`SELECT to_json(r)::VARCHAR AS j FROM report_rows r ORDER BY j`);
  return rows.getRows().map((row) => String(row[0]));
}

/** Orders `"<created_at epoch µs> <id>"` keys as the reader's sorted rows lie: by time, then id. */
export function byTimeThenId(a: string, b: string): number {
  const [ta, ia] = a.split(' ');
  const [tb, ib] = b.split(' ');
  const d = BigInt(ta!) - BigInt(tb!);
  if (d !== 0n) return d < 0n ? -1 : 1;
  return ia! < ib! ? -1 : ia! > ib! ? 1 : 0;
}

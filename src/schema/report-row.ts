import { extraFromJson } from './json-text.js';
import type { Report } from './wire-format.js';

/**
 * The select list that rebuilds a canonical {@link Report} from a `reports` row (docs/how-a-sync-works.md): the typed
 * columns, timestamps as epoch milliseconds (DOUBLE, exact below 2^53) so `Date#toISOString()` gives the
 * canonical UTC form with milliseconds, and `extra` as its JSON text (DuckDB keeps the text as stored, so
 * key order survives). {@link rowToReport} reads the columns in this order.
 */
export const REPORT_COLUMNS_SQL = `id, status, destination, category, description, lat, lng, address,
  epoch_ms(created_at)::DOUBLE AS created_ms, epoch_ms(updated_at)::DOUBLE AS updated_ms, extra::VARCHAR AS extra`;
/** Columns {@link REPORT_COLUMNS_SQL} selects. */
export const REPORT_COLUMN_COUNT = 11;

/**
 * One row selected with {@link REPORT_COLUMNS_SQL}, as the canonical report the simulator serialises
 * (`toWire` then gives upstream field names, `location` nested, extras last in stored order).
 *
 * @throws SyntaxError when a stored `extra` is not JSON (the column type guarantees it is)
 */
export function rowToReport(row: readonly unknown[]): Report {
  const extra = row[10];
  return {
    id: row[0] as string,
    status: row[1] as string,
    destination: row[2] as string,
    category: row[3] as string | null,
    description: row[4] as string | null,
    lat: row[5] as number | null,
    lng: row[6] as number | null,
    address: row[7] as string | null,
    createdAt: new Date(row[8] as number).toISOString(),
    updatedAt: new Date(row[9] as number).toISOString(),
    extra: extra === null || extra === undefined ? null : extraFromJson(extra as string),
  };
}

import { RECORD_ISSUE_CODES, type RecordIssue } from '../schema/record-issue.js';

/**
 * A CSV header's names that occur more than once, each with the 0-based positions of its columns (empty
 * for a header without repeats, the usual case). A header is the upstream's data: nothing may be taken
 * for granted about it.
 */
export type RepeatedColumns = ReadonlyArray<{ name: string; at: readonly number[] }>;

/** The names of `header` given more than once, with their positions (see {@link RepeatedColumns}). */
export function repeatedColumns(header: readonly string[]): RepeatedColumns {
  const at = new Map<string, number[]>();
  header.forEach((name, i) => {
    const list = at.get(name);
    if (list) list.push(i);
    else at.set(name, [i]);
  });
  return [...at].filter(([, list]) => list.length > 1).map(([name, list]) => ({ name, at: list }));
}

/**
 * One CSV row as column name → cell (`null` for an unquoted empty cell), or the issue that quarantines it.
 *
 * - Every header name is a plain key, `__proto__`, `constructor` and `prototype` included: the object has no
 *   prototype, so no name can reach one (an assignment to `__proto__` of a plain object sets its prototype
 *   and the cell is lost).
 * - A name given twice is one field only when its cells agree in this row (a copied column); cells that
 *   differ quarantine the row with the column named, never one value silently kept over the other.
 *
 * @param columns the header, cell for cell (same length as `fields`)
 * @param repeated `repeatedColumns(columns)`, computed once per page
 */
export function csvRowValue(
  columns: readonly string[],
  fields: ReadonlyArray<string | null>,
  repeated: RepeatedColumns,
): { value: Record<string, string | null> } | { issue: RecordIssue } {
  for (const { name, at } of repeated) {
    const first = fields[at[0]!];
    if (at.every((i) => fields[i] === first)) continue;
    const where = at.map((i) => i + 1).join(', ');
    const cells = at.map((i) => cellText(fields[i] ?? null)).join(' vs ');
    return {
      issue: {
        path: name,
        message:
          `column ${JSON.stringify(name)} is in the header ${at.length} times (columns ${where}) with different ` +
          `cells in this row (${cells}): which one is the field's cannot be told`,
        code: RECORD_ISSUE_CODES.conflictingValues,
      },
    };
  }
  const value = Object.create(null) as Record<string, string | null>;
  for (let i = 0; i < columns.length; i++) value[columns[i]!] = fields[i] ?? null;
  return { value };
}

// A cell as an issue shows it: quoted, cut to a readable length (the raw row keeps it whole).
function cellText(cell: string | null): string {
  if (cell === null) return 'empty';
  return JSON.stringify(cell.length > 40 ? `${cell.slice(0, 40)}…` : cell);
}

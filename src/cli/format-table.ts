/** Options of {@link formatTable}. */
export interface TableOptions {
  /** How a `null`/`undefined` cell is shown (default: empty; `sql` shows `NULL`). */
  nullAs?: string;
  /** Columns aligned right (numbers); besides these, a column of JS numbers (and nulls) is too. */
  rightAlign?: ReadonlySet<string>;
}

/**
 * Renders rows as an aligned plain-text table (header, rule, one line per row), for terminals.
 * Values are shown with `String()` (objects as JSON); line breaks inside a value as `\n`; numeric columns
 * right-aligned.
 */
export function formatTable(rows: Record<string, unknown>[], options: TableOptions = {}): string {
  if (rows.length === 0) return '(no rows)\n';
  const columns = Object.keys(rows[0]!);
  const nullAs = options.nullAs ?? '';
  const cell = (v: unknown) =>
    v === null || v === undefined
      ? nullAs
      : (typeof v === 'object' ? JSON.stringify(v) : String(v)).replace(/\r?\n/g, '\\n');
  const right = columns.map(
    (c) =>
      options.rightAlign?.has(c) === true ||
      (rows.some((r) => typeof r[c] === 'number') &&
        rows.every((r) => typeof r[c] === 'number' || r[c] === null || r[c] === undefined)),
  );
  const cells = rows.map((r) => columns.map((c) => cell(r[c])));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => (right[i] ? v.padStart(widths[i]!) : v.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(columns), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n') + '\n';
}

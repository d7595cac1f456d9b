/**
 * Renders rows as an aligned plain-text table (header, rule, one line per row), for terminals.
 * Values are shown with `String()`; `null` as an empty cell; line breaks inside a value as `\n`.
 */
export function formatTable(rows: Record<string, unknown>[]): string {
  if (rows.length === 0) return '(no rows)\n';
  const columns = Object.keys(rows[0]!);
  const cell = (v: unknown) =>
    v === null || v === undefined
      ? ''
      : (typeof v === 'object' ? JSON.stringify(v) : String(v)).replace(/\r?\n/g, '\\n');
  const cells = rows.map((r) => columns.map((c) => cell(r[c])));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(columns), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n') + '\n';
}

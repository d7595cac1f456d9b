import { escapeControls, stringWidth, truncateToWidth } from '../util/screen.js';

/** Options of {@link formatTable}. */
export interface TableOptions {
  /** How a `null`/`undefined` cell is shown (default: empty; `sql` shows `NULL`). */
  nullAs?: string;
  /** Columns aligned right (numbers); besides these, a column of JS numbers (and nulls) is too. */
  rightAlign?: ReadonlySet<string>;
  /**
   * The widest a line may be, in terminal columns (a terminal's width, see util/screen.ts `screenWidth`):
   * text values are cut with `…`, as the DuckDB CLI does, and when even that is not enough columns are
   * left out, named in a last line. Undefined: every value whole (output for programs).
   */
  maxWidth?: number | undefined;
  /** Text columns never cut (identifiers such as run ids, useless in part). */
  whole?: ReadonlySet<string>;
  /** Columns left out, in this order, before others are cut to fit. */
  dropFirst?: readonly string[];
  /** Show JS numbers with digit groups (`300,000`), as people read counts. */
  groupDigits?: boolean;
}

/** Narrowest a text column is cut to before columns are left out (terminal columns). */
const MIN_TEXT_WIDTH = 10;
const GAP = 2;

/**
 * Renders rows as an aligned plain-text table (header, rule, one line per row), for terminals. The columns
 * are the keys of the first row, in their order (JavaScript puts integer-like keys first: a table whose
 * column names may look like numbers, or repeat, goes through {@link formatGrid}). See {@link formatGrid}
 * for how values are shown.
 */
export function formatTable(rows: Record<string, unknown>[], options: TableOptions = {}): string {
  if (rows.length === 0) return '(no rows)\n';
  const columns = Object.keys(rows[0]!);
  return formatGrid(
    columns,
    rows.map((r) => columns.map((c) => r[c])),
    options,
  );
}

/**
 * Renders a table given as its column names (shown in this order, duplicates allowed) and rows of values
 * (one per column): header, rule, one line per row. Values are shown with `String()` (objects as JSON);
 * line breaks and tabs inside a value as `\n`, `\t`, other control characters as their escape
 * (util/screen.ts `escapeControls`), in names too; numeric columns right-aligned (options name columns by
 * name; `rightAlignAt` by position). Widths are display columns (string-width), so CJK text and emoji keep
 * the columns aligned. With `maxWidth`, every line fits in it (see {@link TableOptions.maxWidth}); numbers
 * and `whole` columns are never cut (a cut number would read as another number).
 */
export function formatGrid(
  columns: readonly string[],
  rows: readonly (readonly unknown[])[],
  options: TableOptions & { rightAlignAt?: ReadonlySet<number> } = {},
): string {
  if (rows.length === 0) return '(no rows)\n';
  const nullAs = options.nullAs ?? '';
  const text = (v: string) =>
    escapeControls(v.replace(/\r?\n/g, '\\n').replace(/\r/g, '\\r').replace(/\t/g, '\\t'));
  const cell = (v: unknown) =>
    v === null || v === undefined
      ? nullAs
      : typeof v === 'number' && options.groupDigits
        ? v.toLocaleString('en-US')
        : text(typeof v === 'object' ? JSON.stringify(v) : String(v));
  const right = columns.map(
    (c, i) =>
      options.rightAlign?.has(c) === true ||
      options.rightAlignAt?.has(i) === true ||
      (rows.some((r) => typeof r[i] === 'number') &&
        rows.every((r) => typeof r[i] === 'number' || r[i] === null || r[i] === undefined)),
  );
  const header = columns.map(text);
  const cells = rows.map((r) => columns.map((_, i) => cell(r[i])));
  const natural = columns.map((_, i) =>
    Math.max(stringWidth(header[i]!), ...cells.map((row) => stringWidth(row[i]!))),
  );
  // The narrowest each column may become: numbers and whole columns as they are, text cut to a minimum.
  const least = columns.map((c, i) =>
    right[i] || options.whole?.has(c) === true
      ? natural[i]!
      : Math.min(natural[i]!, Math.max(MIN_TEXT_WIDTH, stringWidth(header[i]!))),
  );
  const dropOrder = (options.dropFirst ?? []).map((c) => columns.indexOf(c)).filter((i) => i >= 0);
  const layout = fitColumns(natural, least, dropOrder, options.maxWidth);
  const line = (values: string[]) =>
    layout
      .map(({ column, width }) => {
        const v = truncateToWidth(values[column]!, width);
        const pad = ' '.repeat(Math.max(0, width - stringWidth(v)));
        return right[column] ? pad + v : v + pad;
      })
      .join(' '.repeat(GAP))
      .trimEnd();
  const rule = layout.map(({ width }) => '-'.repeat(width)).join(' '.repeat(GAP));
  const lines = [line(header), rule, ...cells.map(line)];
  const left = header.filter((_, i) => !layout.some((slot) => slot.column === i));
  if (left.length > 0) {
    const note = `(${left.length} more column${left.length === 1 ? '' : 's'} not shown: ${left.join(', ')})`;
    lines.push(truncateToWidth(note, options.maxWidth ?? note.length));
  }
  return lines.join('\n') + '\n';
}

interface Slot {
  column: number;
  width: number;
}

/**
 * The columns shown and their widths so that a line fits in `maxWidth`: all at their `natural` width when
 * they fit; else the columns of `dropOrder` are left out (in order) while the rest does not fit whole; then
 * the text columns are cut to a common cap, as high as fits but never below `least`; when even that is too
 * wide, more columns are left out from the middle, so the first and last stay longest.
 */
function fitColumns(
  natural: number[],
  least: number[],
  dropOrder: number[],
  maxWidth: number | undefined,
): Slot[] {
  const all = natural.map((_, i) => i);
  const span = (kept: number[], width: (i: number) => number) =>
    kept.reduce((sum, i) => sum + width(i), 0) + GAP * Math.max(0, kept.length - 1);
  if (maxWidth === undefined || span(all, (i) => natural[i]!) <= maxWidth) {
    return all.map((column) => ({ column, width: natural[column]! }));
  }
  let kept = all;
  const drops = [...dropOrder];
  // Columns that may go are left out before others are cut; then, while cut is not enough, more.
  while (drops.length > 0 && kept.length > 1 && span(kept, (i) => natural[i]!) > maxWidth) {
    kept = kept.filter((i) => i !== drops[0]);
    drops.shift();
  }
  while (kept.length > 1 && span(kept, (i) => least[i]!) > maxWidth) {
    const next = drops.shift() ?? kept[Math.floor(kept.length / 2)]!;
    kept = kept.filter((i) => i !== next);
  }
  const capped = (cap: number) => (i: number) => Math.max(least[i]!, Math.min(natural[i]!, cap));
  let cap = Math.max(...kept.map((i) => natural[i]!));
  while (cap > 1 && span(kept, capped(cap)) > maxWidth) cap--;
  // One column wider than the screen even at its least (a long number): cut to the screen.
  return kept.map((column) => ({ column, width: Math.min(capped(cap)(column), maxWidth) }));
}

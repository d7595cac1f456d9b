import fc from 'fast-check';
import stringWidth from 'string-width';
import { describe, expect, it } from 'vitest';
import { formatGrid, formatTable } from '../../src/cli/format-table.js';
import { escapeControls, truncateToWidth, wrapToWidth } from '../../src/util/screen.js';

const lines = (text: string) => text.replace(/\n$/, '').split('\n');

/** Display columns where each column of a table line starts (after runs of 2+ spaces). */
function columnStarts(line: string): number[] {
  const starts = [0];
  for (const m of line.matchAll(/ {2,}(?=\S)/g))
    starts.push(stringWidth(line.slice(0, m.index + m[0].length)));
  return starts;
}

describe('formatTable', () => {
  const long =
    'expected a non-blank string or a non-negative integer of at most 2^53 − 1 (a larger one: as a string)';
  const rows = [
    { field: 'id', records: 12, example: long, where: 'line 6410' },
    { field: 'lat', records: 3, example: 'Too big: expected number to be <=90', where: 'line 3386' },
  ];

  it('prints every value whole when no width is given (output for programs)', () => {
    const text = formatTable(rows);
    expect(text).toContain(long);
    expect(text).not.toContain('…');
  });

  it('fits a terminal width: long text cut with …, numbers whole, every line within the width', () => {
    for (const width of [40, 60, 80, 120]) {
      const text = formatTable(rows, { maxWidth: width });
      for (const l of lines(text)) expect(stringWidth(l), `${width}: ${l}`).toBeLessThanOrEqual(width);
      if (width < 120) expect(text).toContain('…');
      expect(text).toMatch(/\b12\b/);
    }
  });

  it('aligns columns by display width: CJK and emoji take two columns each', () => {
    const text = formatTable([
      { city: '東京都', n: 1, note: 'a' },
      { city: 'Köln', n: 22, note: '🚲 bike' },
      { city: 'NYC', n: 333, note: 'b' },
    ]);
    const [header, , ...body] = lines(text);
    const starts = columnStarts(header!);
    for (const l of body) expect(columnStarts(l).slice(-1)).toEqual(starts.slice(-1));
  });

  it('cuts CJK text on a character boundary and still fits', () => {
    const text = formatTable([{ a: '東京都千代田区丸の内一丁目九番二号', b: 'x' }], { maxWidth: 16 });
    for (const l of lines(text)) expect(stringWidth(l)).toBeLessThanOrEqual(16);
    expect(text).toContain('…');
  });

  it('leaves out columns that cannot fit and names them, those of dropFirst first', () => {
    const wide = Object.fromEntries(
      Array.from({ length: 12 }, (_, i) => [`column_${i}`, `value number ${i}`]),
    );
    const text = formatTable([wide], { maxWidth: 80, dropFirst: ['column_0'] });
    for (const l of lines(text)) expect(stringWidth(l)).toBeLessThanOrEqual(80);
    const note = lines(text).at(-1)!;
    expect(note).toMatch(/^\(\d+ more columns not shown: column_0, /);
    expect(lines(text)[0]).not.toContain('column_0');
    expect(lines(text)[0]).toContain('column_11'); // the last column stays
  });

  it('keeps whole columns whole (an id cut in half names nothing)', () => {
    const id = '20261125T220630587Z-ndjson-b72299';
    const text = formatTable([{ run_id: id, error: long }], { maxWidth: 60, whole: new Set(['run_id']) });
    expect(text).toContain(id);
    for (const l of lines(text)) expect(stringWidth(l)).toBeLessThanOrEqual(60);
  });

  it('any rows fit any width from 20 columns, and off a terminal every value is printed whole (property)', () => {
    const text = fc.oneof(
      fc.string({ unit: 'grapheme', maxLength: 40 }),
      fc.constantFrom('東京都千代田区', 'Köln-Ehrenfeld', '👩‍👩‍👧 family', 'é'.normalize('NFD').repeat(5), ''),
    );
    const cellValue = fc.oneof(text, fc.integer({ min: -1e9, max: 1e9 }), fc.constant(null));
    fc.assert(
      fc.property(
        fc.array(fc.dictionary(fc.constantFrom('a', 'b', 'name', 'ΔΣ', 'описание'), cellValue), {
          minLength: 1,
          maxLength: 5,
        }),
        fc.integer({ min: 20, max: 160 }),
        (records, width) => {
          const columns = [...new Set(records.flatMap((r) => Object.keys(r)))];
          if (columns.length === 0) return;
          const rows = records.map((r) => Object.fromEntries(columns.map((c) => [c, r[c] ?? null])));
          for (const l of lines(formatTable(rows, { maxWidth: width }))) {
            expect(stringWidth(l)).toBeLessThanOrEqual(width);
          }
          const whole = formatTable(rows);
          for (const r of rows) {
            for (const v of Object.values(r))
              // A line's trailing blanks are not printed: a value is whole up to them.
              if (typeof v === 'string' && !/[\r\n\t]/.test(v)) expect(whole).toContain(v.trimEnd());
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('control characters from the upstream or the warehouse', () => {
  // C0 but LF and TAB, DEL, C1, bidirectional overrides and isolates: what a terminal acts on.
  // eslint-disable-next-line no-control-regex -- control characters are what the test looks for
  const ACTS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
  const hostile = fc.string({
    unit: fc.oneof(
      fc.constantFrom('\u001b', '\u0007', '\r', '\u009b', '\u202e', '\u2066', '\u0000', '\u007f', '\n', '\t'),
      fc.constantFrom('[2J', ']0;title', 'a', 'é', '漢', ' '),
    ),
  });

  it('are shown as escapes in tables, names included, and never reach the terminal (property)', () => {
    fc.assert(
      fc.property(
        hostile,
        hostile,
        fc.option(fc.integer({ min: 20, max: 120 }), { nil: undefined }),
        (name, value, width) => {
          const text = formatGrid(['field', name], [[value, 1]], { maxWidth: width });
          expect(text.replace(/\n/g, '')).not.toMatch(ACTS);
          expect(text.replace(/\n$/, '').split('\n').length).toBeGreaterThanOrEqual(3);
        },
      ),
    );
    const shown = formatTable([{ field: '\u001b[2J\u001b[31mPWNED', where: 'bell\u0007 \u202egnp.exe' }]);
    expect(shown).toContain('\\u001b[2J\\u001b[31mPWNED');
    expect(shown).toContain('bell\\u0007 \\u202egnp.exe');
  });

  it('are escaped in report text, wrapped or whole, while its lines and tabs stay', () => {
    fc.assert(
      fc.property(
        hostile,
        fc.option(fc.integer({ min: 10, max: 100 }), { nil: undefined }),
        (text, width) => {
          const out = wrapToWidth(text, width);
          expect(out).not.toMatch(ACTS);
          if (width === undefined) expect(out).toBe(escapeControls(text));
        },
      ),
    );
    expect(wrapToWidth('error: \u001b]0;owned\u0007\n\tnext', undefined)).toBe(
      'error: \\u001b]0;owned\\u0007\n\tnext',
    );
  });
});

describe('formatGrid', () => {
  it('keeps the columns in the order given, names that look like numbers or repeat included', () => {
    const text = formatGrid(
      ['destination', '3', 'SUBMITTED', 'Submitted', 'destination'],
      [['ROADS', '1', '2', '3', '4']],
      { rightAlignAt: new Set([1, 2, 3, 4]) },
    );
    const [header, , row] = lines(text);
    expect(header!.trim().split(/\s{2,}/)).toEqual([
      'destination',
      '3',
      'SUBMITTED',
      'Submitted',
      'destination',
    ]);
    expect(row!.trim().split(/\s{2,}/)).toEqual(['ROADS', '1', '2', '3', '4']);
    expect(formatGrid(['a'], [])).toBe('(no rows)\n');
  });
});

describe('wrapToWidth and truncateToWidth', () => {
  it('wrap every line to the width, indenting what follows, and keep every word', () => {
    const text =
      '  error: HTTP 500 from http://127.0.0.1:22501/api/v1/public/reports.ndjson: {"error":{"code":"INTERNAL"}}\nshort';
    for (const width of [30, 50, 80]) {
      const wrapped = wrapToWidth(text, width);
      for (const l of lines(wrapped)) expect(stringWidth(l)).toBeLessThanOrEqual(width);
      expect(wrapped.replace(/\s+/g, '')).toBe(text.replace(/\s+/g, ''));
      expect(lines(wrapped)[1]).toMatch(/^ {4}\S/);
    }
    expect(wrapToWidth(text, undefined)).toBe(text);
  });

  it('wrap any text, CJK and emoji included, within any width from 10 columns (property)', () => {
    const word = fc.oneof(
      fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 30 }),
      fc.constantFrom(
        '東京都千代田区丸の内',
        '👩‍👩‍👧',
        'Köln',
        'https://example.org/a/very/long/path/without/spaces',
      ),
    );
    fc.assert(
      fc.property(
        fc.array(word, { maxLength: 30 }),
        fc.nat({ max: 6 }),
        fc.integer({ min: 10, max: 100 }),
        (words, indent, width) => {
          const text = ' '.repeat(indent) + words.join(' ');
          for (const l of lines(wrapToWidth(text, width))) expect(stringWidth(l)).toBeLessThanOrEqual(width);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('cut to the width with …, by display columns', () => {
    expect(truncateToWidth('abcdef', 4)).toBe('abc…');
    expect(truncateToWidth('abc', 4)).toBe('abc');
    expect(stringWidth(truncateToWidth('東京都千代田区', 5))).toBeLessThanOrEqual(5);
  });
});

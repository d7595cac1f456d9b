import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseCsvPage } from '../../src/extract/csv.js';

const options = {
  page: 1,
  maxRecordBytes: 1 << 20,
  rejectRawMaxBytes: 256,
  url: 'http://up/reports.csv?page=1',
};

/** A cell as the upstream means it: NULL, the empty string, or text; and how the upstream writes it. */
const cell = fc.oneof(
  fc.constant({ value: null as string | null, quote: false }),
  fc.constant({ value: '' as string | null, quote: true }),
  fc.record({ value: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 }), quote: fc.boolean() }),
  fc.record({
    value: fc.stringMatching(/^[ a-z",\r\n]{1,8}$/).filter((s) => s.trim() !== ''),
    quote: fc.constant(true),
  }),
);

function written(c: { value: string | null; quote: boolean }): string {
  if (c.value === null) return '';
  // Text holding a quote, delimiter or line break must be quoted; other text is quoted when the upstream likes.
  const must = /[",\r\n]/.test(c.value) || c.value === '';
  return must || c.quote ? `"${c.value.replaceAll('"', '""')}"` : c.value;
}

describe('CSV cells: an unquoted empty cell is NULL, a quoted "" the empty string', () => {
  it('holds for every cell of generated pages (line endings, blank lines, BOM, multi-line quoted cells)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5 }),
        fc.array(fc.array(cell, { minLength: 5, maxLength: 5 }), { minLength: 1, maxLength: 6 }),
        fc.constantFrom('\n', '\r\n'),
        fc.boolean(),
        fc.array(fc.boolean(), { minLength: 6, maxLength: 6 }),
        (width, rows, eol, bom, blankBefore) => {
          // The parser refuses rows under a header without `id` (a page whose header went missing).
          const header = Array.from({ length: width }, (_, i) => (i === 0 ? 'id' : `c${i}`));
          // A row of one NULL cell would be a blank line (skipped, as CSV readers do): keep one non-NULL.
          const table = rows
            .map((r) => r.slice(0, width))
            .filter((r) => r.some((c) => c.value !== null) || width > 1);
          const lines = table.map((r, i) => (blankBefore[i] ? eol : '') + r.map(written).join(',') + eol);
          const text = (bom ? '\uFEFF' : '') + header.join(',') + eol + lines.join('');
          const page = parseCsvPage(Buffer.from(text), options);
          const got = page.records.map((r) => (r.kind === 'value' ? r.value : r));
          const want = table.map((r) => Object.fromEntries(r.map((c, i) => [header[i], c.value])));
          expect(got).toEqual(want);
        },
      ),
      { numRuns: 400 },
    );
  });
});

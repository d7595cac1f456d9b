import fc from 'fast-check';
import { stringify } from 'csv-stringify/sync';
import { describe, expect, it } from 'vitest';
import { parseCsvPage, type CsvPage } from '../../src/extract/csv.js';

// Some CSV writers end rows with a lone CR (classic Mac OS). Read as LF/CRLF only, such a page was one
// header row holding every row: zero rows, and the run could call the export complete.

const options = {
  page: 1,
  maxRecordBytes: 4096,
  rejectRawMaxBytes: 256,
  url: 'http://up/reports.csv?page=1',
};
const parse = (text: string): CsvPage => parseCsvPage(Buffer.from(text), options);
const values = (p: CsvPage) => p.records.map((r) => (r.kind === 'value' ? r.value : r.kind));

/** Cells of any text, line breaks and quotes included (the writer quotes what needs it, as RFC 4180 asks). */
const cell = fc.string({
  unit: fc.constantFrom('a', 'é', ' ', ',', '"', '\r', '\n', '\r\n', '😀'),
  maxLength: 8,
});

describe('CSV pages whose rows end with a lone CR', () => {
  it('read to the same rows, lines and keys as the page written with LF or CRLF (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(cell, cell), { minLength: 1, maxLength: 12 }), (rows) => {
        const records = [['id', 'description'], ...rows.map(([d], i) => [`r-${i}`, d])];
        const write = (record_delimiter: string) =>
          stringify(records, { record_delimiter, quoted_empty: true, quoted_match: /[\r\n]/ });
        const lf = parse(write('\n'));
        const cr = parse(write('\r'));
        const crlf = parse(write('\r\n'));
        expect(values(cr)).toEqual(values(lf));
        expect(values(crlf)).toEqual(values(lf));
        expect(cr.records).toHaveLength(rows.length);
        expect([cr.lines, cr.keysDigest]).toEqual([lf.lines, lf.keysDigest]);
        // A line break inside quotes is data, whatever the rows end with.
        expect(values(cr).map((v) => (v as { description: string }).description)).toEqual(
          rows.map(([d]) => d),
        );
      }),
    );
  });

  it('a page of CR-ended rows under a CRLF header keeps its CRs as data: one ragged row quarantined, none lost', () => {
    const p = parseCsvPage(Buffer.from('id,description\r\nr-1,a\rr-2,b\r'), { ...options, endChecked: true });
    expect(p.records).toHaveLength(1);
    expect(values(p)).toEqual(['malformed']);
  });
});

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseCsvPage, type CsvPage, type CsvPageOptions } from '../../src/extract/csv.js';
import type { ExtractedRecord as Extracted } from '../../src/extract/record.js';
import { KnownLines } from '../../src/normalize/known-lines.js';
import { isSyncError } from '../../src/util/errors.js';

const HEADER = 'id,status,description\r\n';
const options = { page: 3, maxRecordBytes: 1024, rejectRawMaxBytes: 64, url: 'http://up/reports.csv?page=3' };

function page(text: string | Buffer, opts: Partial<CsvPageOptions> = {}): CsvPage {
  return parseCsvPage(Buffer.isBuffer(text) ? text : Buffer.from(text), { ...options, ...opts });
}

/** What parsing `text` as page 3 throws (undefined when it does not). */
function thrown(text: string): unknown {
  try {
    page(text);
  } catch (err) {
    return err;
  }
  return undefined;
}

function values(p: CsvPage): unknown[] {
  return p.records.filter((r) => r.kind === 'value').map((r) => (r as { value: unknown }).value);
}

function malformed(p: CsvPage): Array<Extract<Extracted, { kind: 'malformed' }>> {
  return p.records.filter((r): r is Extract<Extracted, { kind: 'malformed' }> => r.kind === 'malformed');
}

describe('parseCsvPage', () => {
  it('keeps multi-line quoted fields, CRLF inside them and non-ASCII text byte for byte, with physical lines', () => {
    const p = page(
      `${HEADER}1,SUBMITTED,"Zeile eins\r\nZeile zwei, mit ""Anführungszeichen"""\r\n2,SUBMITTED,Straße 🚧\r\n`,
    );
    expect(values(p)).toEqual([
      { id: '1', status: 'SUBMITTED', description: 'Zeile eins\r\nZeile zwei, mit "Anführungszeichen"' },
      { id: '2', status: 'SUBMITTED', description: 'Straße 🚧' },
    ]);
    expect(p.records.map((r) => r.location)).toEqual([
      { page: 3, row: 1, line: 2 },
      { page: 3, row: 2, line: 4 },
    ]);
    expect(p.records[0]?.raw).toBe('1,SUBMITTED,"Zeile eins\r\nZeile zwei, mit ""Anführungszeichen"""');
    expect({ parsed: p.parsed, rejected: p.rejected, lines: p.lines, skipped: p.skippedLines }).toEqual({
      parsed: 2,
      rejected: 0,
      lines: 4,
      skipped: 1,
    });
  });

  it('strips a BOM and skips blank lines without losing their numbers', () => {
    const p = page(`\uFEFF${HEADER}1,SUBMITTED,a\r\n\r\n\r\n2,SUBMITTED,b\r\n`);
    expect(p.columns).toEqual(['id', 'status', 'description']);
    expect(values(p)).toEqual([
      { id: '1', status: 'SUBMITTED', description: 'a' },
      { id: '2', status: 'SUBMITTED', description: 'b' },
    ]);
    expect(p.records.map((r) => r.location.line)).toEqual([2, 5]);
  });

  it('strips only the BOM before the header: a U+FEFF starting a later cell, row or header field stays', () => {
    const F = '\uFEFF';
    // The header's first column is not `id` here: a second BOM would make it `\uFEFFid`, no id column.
    const p = page(
      `${F}${F}status,id,description\r\n${F}S,1,${F}a\r\nS,2,"never closed\r\n${F}S,${F}3,${F}\r\n`,
    );
    expect(p.columns).toEqual([`${F}status`, 'id', 'description']);
    expect(values(p)).toEqual([
      { [`${F}status`]: `${F}S`, id: '1', description: `${F}a` },
      { [`${F}status`]: `${F}S`, id: `${F}3`, description: F },
    ]);
    expect(malformed(p).map((r) => r.location.row)).toEqual([2]);
  });

  it('in a CRLF page keeps a bare LF inside an unquoted field, and splits a row ended by LF alone', () => {
    const p = page(`${HEADER}1,SUBMITTED,line one\nline two\r\n2,SUBMITTED,b\n3,SUBMITTED,c\r\n`);
    expect(values(p)).toEqual([
      { id: '1', status: 'SUBMITTED', description: 'line one\nline two' },
      { id: '2', status: 'SUBMITTED', description: 'b' },
      { id: '3', status: 'SUBMITTED', description: 'c' },
    ]);
    expect(p.records.map((r) => [r.location.row, r.location.line, r.raw])).toEqual([
      [1, 2, '1,SUBMITTED,line one\nline two'],
      [2, 4, '2,SUBMITTED,b'],
      [3, 5, '3,SUBMITTED,c'],
    ]);
  });

  it('in a CRLF page reads a row ended by LF alone right after a closing quote', () => {
    const p = page(`${HEADER}1,SUBMITTED,"quoted, with comma"\n2,SUBMITTED,b\r\n`);
    expect(values(p).map((v) => (v as { description: string }).description)).toEqual([
      'quoted, with comma',
      'b',
    ]);
    expect(p.records.map((r) => r.location.line)).toEqual([2, 3]);
  });

  it('reads an LF-only page', () => {
    const p = page('id,status,description\n1,SUBMITTED,"x\ny"\n2,SUBMITTED,b\n');
    expect(values(p).map((v) => (v as { description: string }).description)).toEqual(['x\ny', 'b']);
  });

  it('quarantines an unclosed quote by its line and still reads every later row', () => {
    const p = page(
      `${HEADER}1,SUBMITTED,ok\r\n2,SUBMITTED,"never closed\r\n3,SUBMITTED,ok\r\n4,SUBMITTED,ok\r\n`,
    );
    expect(values(p).map((v) => (v as { id: string }).id)).toEqual(['1', '3', '4']);
    const [bad] = malformed(p);
    expect(bad?.location).toEqual({ page: 3, row: 2, line: 3 });
    expect(bad?.raw).toBe('2,SUBMITTED,"never closed');
    expect(bad?.issues[0]?.message).toMatch(/^malformed CSV: Quote Not Closed/);
    expect(p.parsed + p.rejected).toBe(4);
  });

  it('re-reads the rows a broken quote joined into one ragged multi-line row', () => {
    const p = page(`${HEADER}1,SUBMITTED,"open\r\n2,SUBMITTED,ok",extra\r\n3,SUBMITTED,fine\r\n`);
    expect(values(p).map((v) => (v as { id: string }).id)).toEqual(['3']);
    expect(malformed(p).map((r) => [r.location.row, r.location.line, r.raw])).toEqual([
      [1, 2, '1,SUBMITTED,"open'],
      [2, 3, '2,SUBMITTED,ok",extra'],
    ]);
    expect(malformed(p)[0]?.issues[0]?.message).toMatch(/a row of 4 cells over 2 lines/);
  });

  it('quarantines a stray quote and a quote inside a quoted field, one row each', () => {
    const p = page(`${HEADER}1,SUBMITTED,half"way\r\n2,SUBMITTED,"bad"quote"\r\n3,SUBMITTED,ok\r\n`);
    expect(values(p).map((v) => (v as { id: string }).id)).toEqual(['3']);
    expect(malformed(p).map((r) => [r.location.row, r.location.line, r.raw])).toEqual([
      [1, 2, '1,SUBMITTED,half"way'],
      [2, 3, '2,SUBMITTED,"bad"quote"'],
    ]);
  });

  it('quarantines ragged rows (too few or too many cells) instead of shifting columns', () => {
    const p = page(`${HEADER}1,SUBMITTED\r\n2,SUBMITTED,b,extra\r\n3,SUBMITTED,c\r\n`);
    expect(values(p)).toEqual([{ id: '3', status: 'SUBMITTED', description: 'c' }]);
    expect(malformed(p).map((r) => [r.location.row, r.issues[0]?.message])).toEqual([
      [1, 'ragged row: 2 cells where the header has 3 columns'],
      [2, 'ragged row: 4 cells where the header has 3 columns'],
    ]);
  });

  it('quarantines a record over max_record_size with a bounded raw text', () => {
    const giant = 'x'.repeat(5000);
    const p = page(`${HEADER}1,SUBMITTED,"${giant}"\r\n2,SUBMITTED,ok\r\n`);
    expect(values(p)).toEqual([{ id: '2', status: 'SUBMITTED', description: 'ok' }]);
    const [bad] = malformed(p);
    expect(bad?.location).toEqual({ page: 3, row: 1, line: 2 });
    expect(bad?.rawTruncated).toBe(true);
    expect(bad?.rawBytes).toBe(`1,SUBMITTED,"${giant}"`.length);
    expect(Buffer.byteLength(bad?.raw ?? '')).toBeLessThanOrEqual(64);
    // Its id is read from its first bytes, so its quarantined copy still names report 1.
    expect(bad?.recordId).toBe('1');
    const [later] = malformed(page(`status,description,id\r\nS,"${giant}",r-7\r\n`));
    expect(later?.recordId).toBe('r-7');
    const [far] = malformed(page(`status,description,id\r\nS,"${giant.repeat(14)}",r-7\r\n`));
    expect(far?.recordId).toBeUndefined(); // past the first 64 KiB: not looked for
    // The lines after a refused multi-line row may be its continuation: no id is read from them, nor from
    // a row refused for a broken quote (it may itself be such a line).
    const multi = malformed(
      page(
        `${HEADER}1,SUBMITTED,"${giant}\r\nNear house 12, left side\r\n2, see ""photo"" attached"\r\n3,S,ok\r\n`,
      ),
    );
    expect(multi.map((r) => r.recordId)).toEqual(['1', undefined, undefined]);
    const quote = malformed(
      page(`${HEADER}1,SUBMITTED,"first "bad" quote\r\nNear 12, left "side"\r\n4,S,ok\r\n`),
    );
    expect(quote.map((r) => r.recordId)).toEqual([undefined, undefined]);
    // A refused row whose quotes all close on its line ended there: the next line is a row of its own.
    const twice = malformed(
      page(`${HEADER}1,SUBMITTED,"${giant}"\r\n2,"S ""x""",${giant}\r\n3,S,"${giant}"\r\n4,S,ok\r\n`),
    );
    expect(twice.map((r) => [r.location.row, r.recordId])).toEqual([
      [1, '1'],
      [2, '2'],
      [3, '3'],
    ]);
    const thenMulti = malformed(page(`${HEADER}1,S,${giant}\r\n2,S,"${giant}\r\nmore, "x"\r\n5,S,ok\r\n`));
    expect(thenMulti.map((r) => r.recordId)).toEqual(['1', '2', undefined]);
  });

  it('treats a body cut inside a row as truncated (retryable), not as a bad row', () => {
    for (const body of [
      `${HEADER}1,SUBMITTED,ok\r\n2,SUBMI`,
      `${HEADER}1,SUBMITTED,ok\r\n2,SUBMITTED,"cut in a qu`,
    ]) {
      const error = thrown(body);
      expect(isSyncError(error, 'BODY_TRUNCATED'), body).toBe(true);
      expect((error as { retryable: boolean }).retryable).toBe(true);
    }
    // A complete last row without a final line break is fine (RFC 4180 §2.2).
    expect(values(page(`${HEADER}1,SUBMITTED,ok`))).toHaveLength(1);
  });

  it('never leaves a CR in a cell: a header ending with LF over rows ending with CRLF', () => {
    const p = page('id,status,description\n1,SUBMITTED,desc 1\r\n2,SUBMITTED,"two\r\nlines"\r\n');
    expect(values(p)).toEqual([
      { id: '1', status: 'SUBMITTED', description: 'desc 1' },
      { id: '2', status: 'SUBMITTED', description: 'two\r\nlines' },
    ]);
    expect(malformed(p)).toEqual([]);
  });

  it('takes the line break of the header from outside its quotes (a column name may hold one)', () => {
    const p = page('id,status,"odd\nname"\r\n1,SUBMITTED,a\nb\r\n');
    expect(values(p)).toEqual([{ id: '1', status: 'SUBMITTED', 'odd\nname': 'a\nb' }]);
  });

  it('quarantines such a last row when the transport checked where the body ends (endChecked)', () => {
    for (const [body, reason] of [
      [`${HEADER}1,SUBMITTED,ok\r\n2,SUBMI`, /ragged row/],
      [`${HEADER}1,SUBMITTED,ok\r\n2,SUBMITTED,"an open quote`, /malformed CSV/],
    ] as const) {
      const p = page(body, { endChecked: true });
      expect(values(p), body).toHaveLength(1);
      const [bad] = malformed(p);
      expect(bad?.location).toEqual({ page: 3, row: 2, line: 3 });
      expect(bad?.issues[0]?.message).toMatch(reason);
    }
  });

  it('reads a header-only page and an empty body as no rows', () => {
    expect(page(HEADER).records).toEqual([]);
    expect(page('').records).toEqual([]);
  });

  it('refuses rows under a header without an `id` column, naming it; a header-only page stays empty', () => {
    // A server sending the header on page 1 only: page 3's first row is taken for its header.
    const rows = '7,SUBMITTED,a\r\n8,SUBMITTED,b\r\n9,SUBMITTED,c\r\n';
    for (const body of [rows, `ident,status,description\r\n${rows}`]) {
      const caught = thrown(body);
      expect(isSyncError(caught, 'CSV_HEADER_INVALID'), body).toBe(true);
      const first = body.slice(0, body.indexOf('\r\n'));
      expect((caught as Error).message).toContain(
        `page 3 of http://up/reports.csv?page=3 has no \`id\` column (it reads "${first}")`,
      );
    }
    // Two columns naming a required field in other styles, none exactly: refused, naming both.
    for (const [body, names] of [
      [`id,Status,STATUS\r\n7,A,B\r\n`, '"Status" and "STATUS"'],
      [`ID,Id,status\r\n7,7,S\r\n`, '"ID" and "Id"'],
    ] as const) {
      const caught = thrown(body);
      expect(isSyncError(caught, 'CSV_HEADER_INVALID'), body).toBe(true);
      expect((caught as Error).message).toContain(names);
    }
    // The key column in another case or padded is the key column (schema/field-names.ts).
    expect(page(` ID ,status\r\n7,SUBMITTED\r\n`).columns).toEqual(['id', 'status']);
    // Whatever text a page past the end holds, with no rows it is an empty page.
    expect(page('No more records\r\n').records).toEqual([]);
  });

  it('names the separator of a header split by ";", a tab or "|" instead of commas, and says only commas are read', () => {
    for (const sep of [';', '\t', '|']) {
      const body = ['id', 'status', 'description'].join(sep) + `\r\n7${sep}SUBMITTED${sep}a, b\r\n`;
      const caught = thrown(body);
      expect(isSyncError(caught, 'CSV_HEADER_INVALID'), body).toBe(true);
      expect((caught as Error).message).toContain(`its names are separated by ${JSON.stringify(sep)}`);
      expect((caught as Error).message).toContain('comma-separated (RFC 4180)');
    }
    // A header of one column holding a ";" in its name is no such header.
    expect((thrown('ident;x\r\n7\r\n') as Error).message).not.toContain('separated by');
  });

  it('gives equal key digests to pages with the same ids and different ones otherwise', () => {
    const a = page(`${HEADER}1,SUBMITTED,a\r\n2,SUBMITTED,b\r\n`);
    const b = page(`${HEADER}1,RESOLVED,changed\r\n2,SUBMITTED,b\r\n`);
    const c = page(`${HEADER}2,SUBMITTED,b\r\n3,SUBMITTED,c\r\n`);
    expect(a.keysDigest).toBe(b.keysDigest);
    expect(a.keysDigest).not.toBe(c.keysDigest);
  });
});

describe('parseCsvPage: the bytes of a row', () => {
  it('hands over each row as its raw text and the same text in UTF-8 bytes, which hash alike (property)', async () => {
    const known = await KnownLines.empty('csv');
    const cell = fc.string({ unit: 'grapheme', maxLength: 12 });
    const quoted = (c: string) => (/[",\r\n]/.test(c) || c === '' ? `"${c.replace(/"/g, '""')}"` : c);
    fc.assert(
      fc.property(fc.array(fc.tuple(cell, cell, cell), { minLength: 1, maxLength: 6 }), (rows) => {
        const body = HEADER + rows.map((r) => `${r.map(quoted).join(',')}\r\n`).join('');
        const got = page(body).records.filter((r) => r.kind === 'value');
        expect(got).toHaveLength(rows.length);
        for (const record of got) {
          if (record.kind !== 'value') continue;
          expect(Buffer.from(record.bytes!).toString('utf8')).toBe(record.raw);
          expect(known.check(record.bytes!).hash).toBe(known.check(record.raw).hash);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('the id of a CSV row quarantined before validation', () => {
  it('is read as its validation would read it: `17.0` is 17, so the quarantined copy protects report 17', () => {
    const body = Buffer.concat([
      Buffer.from('id,status,destination,createdAt,note\n17.0,SUBMITTED,ROAD_CONTROL,2024-01-01T00:00:00Z,'),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('\n18.0,SUBMITTED,ROAD_CONTROL,2024-01-01T00:00:00Z,ok\n'),
    ]);
    const broken = page(body).records.find((r) => r.kind === 'malformed');
    expect(broken).toMatchObject({ kind: 'malformed', recordId: '17' });
  });
});

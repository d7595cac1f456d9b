import fc from 'fast-check';
import { stringify } from 'csv-stringify/sync';
import { describe, expect, it } from 'vitest';
import { cellsCloseOnLine, csvCellFromPrefix } from '../../src/extract/csv-prefix-id.js';

// A row refused whole (too long, a broken quote further on) still names its report when its id cell can be
// read from the row's first bytes: never a wrong id, whatever the cells and wherever the row is cut.

const cell = fc.oneof(
  fc.string({ maxLength: 8 }),
  fc.constantFrom('', '"', '""', 'a,b', 'x\r\ny', 'line\nbreak', 'Köln', ' 17 '),
);
const row = fc.array(cell, { minLength: 1, maxLength: 6 });

/** The row as a CSV writer writes it (quoted where needed), with its line break. */
const written = (cells: string[], quoted: boolean) =>
  Buffer.from(stringify([cells], { quoted, quoted_match: /[\r\n]/, record_delimiter: '\r\n' }));

describe('csvCellFromPrefix', () => {
  it('reads any cell of a whole row as a CSV writer wrote it (property)', () => {
    fc.assert(
      fc.property(row, fc.nat(), fc.boolean(), (cells, pick, quoted) => {
        const column = pick % cells.length;
        expect(csvCellFromPrefix(written(cells, quoted), column)).toBe(cells[column]);
      }),
      { numRuns: 2_000 },
    );
  });

  it('gives the cell or nothing, never another text, for any prefix of the row (property)', () => {
    fc.assert(
      fc.property(row, fc.nat(), fc.nat(), fc.boolean(), (cells, pick, cut, quoted) => {
        const column = pick % cells.length;
        const bytes = written(cells, quoted);
        const read = csvCellFromPrefix(bytes.subarray(0, cut % (bytes.length + 1)), column);
        if (read !== undefined) expect(read).toBe(cells[column]);
      }),
      { numRuns: 2_000 },
    );
  });

  it('reads nothing past the row, a broken cell before it, or a stray quote', () => {
    expect(csvCellFromPrefix(Buffer.from('a,b\r\nc,d'), 2)).toBeUndefined();
    expect(csvCellFromPrefix(Buffer.from('"a"x,b\r\n'), 1)).toBeUndefined();
    expect(csvCellFromPrefix(Buffer.from('a"b,c\r\n'), 1)).toBeUndefined();
    expect(csvCellFromPrefix(Buffer.from([0x31, 0xff, 0x2c, 0x0a]), 0)).toBeUndefined();
    expect(csvCellFromPrefix(Buffer.from(`r-013,${'x'.repeat(100_000)}`), 0)).toBe('r-013');
  });
});

describe('cellsCloseOnLine', () => {
  it('is true exactly when the row as written holds no line break: its first line is the whole row (property)', () => {
    fc.assert(
      fc.property(row, fc.boolean(), (cells, quoted) => {
        const bytes = written(cells, quoted);
        const lf = bytes.indexOf(0x0a);
        const whole = lf === bytes.length - 1;
        expect(cellsCloseOnLine(bytes.subarray(0, lf))).toBe(whole);
      }),
      { numRuns: 2_000 },
    );
    expect(cellsCloseOnLine(Buffer.from('1,a"b,"c'))).toBe(false);
    expect(cellsCloseOnLine(Buffer.from('1,"a"b'))).toBe(false);
    expect(cellsCloseOnLine(Buffer.from('1,"a""b",c\r'))).toBe(true);
  });
});

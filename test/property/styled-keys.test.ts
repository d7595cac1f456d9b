import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseCsvPage } from '../../src/extract/csv.js';
import { readableJsonId } from '../../src/extract/readable-id.js';
import { validateCsvReport } from '../../src/schema/report.js';
import { validateWireLine } from '../../src/schema/wire-line.js';

// Records whose modelled keys come in another style (`created_at`, `ID`) are read through a renamed copy
// of their text: that copy must hold every field, and a repeated key must still be seen.

const snake = (key: string) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const styles = (key: string) => [key, key.toUpperCase(), snake(key), key[0]!.toUpperCase() + key.slice(1)];

const VALUES: Record<string, string> = {
  id: '"r1"',
  status: '"SUBMITTED"',
  destination: '"ROAD_CONTROL"',
  createdAt: '"2024-01-01T00:00:00Z"',
  updatedAt: '"2024-01-02T00:00:00Z"',
};

const modelled = fc.tuple(
  ...Object.keys(VALUES).map((key) =>
    (key === 'createdAt'
      ? fc.constantFrom('created_at', 'CREATED_AT', 'Created At')
      : fc.constantFrom(...styles(key))
    ).map((name) => [name, VALUES[key]!] as [string, string]),
  ),
);
const unknownKey = fc.constantFrom('note', 'tail', 'x y', 'meta', '__proto__');
const unknown = fc.tuple(
  unknownKey,
  fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)),
);

const record = fc
  .record({
    fields: fc.tuple(modelled, fc.array(unknown, { maxLength: 4 })).map(([m, u]) => [...m, ...u]),
    repeat: fc.option(fc.nat(), { nil: undefined }),
    nested: fc.boolean(),
    order: fc.array(fc.nat(), { minLength: 12, maxLength: 12 }),
  })
  .map(({ fields, repeat, nested, order }) => {
    const out = [...fields];
    if (repeat !== undefined) {
      const [key, value] = out[repeat % out.length]!;
      // The repeat: the same key again (top level), or a key twice in a nested object.
      out.push(nested ? ['meta', '{"k":1,"k":2}'] : [key, value === '"x"' ? '"y"' : '"x"']);
      if (nested) out.push(['after', '3']);
    }
    // A stable shuffle: the repeat and the fields after it may be anywhere.
    const keyed = out.map((f, i) => ({ f, k: order[i % order.length]! * 100 + i }));
    return keyed.sort((a, b) => a.k - b.k).map(({ f }) => f);
  });

describe('a record with keys in another style', () => {
  it('keeps every unknown key in extra, or is quarantined naming the repeated key (property)', () => {
    fc.assert(
      fc.property(record, (fields) => {
        const text = `{${fields.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`;
        const result = validateWireLine(text, JSON.parse(text) as unknown);
        const names = fields.map(([k]) => k);
        const repeated = names.find((n, i) => names.indexOf(n) !== i);
        const nestedRepeat = text.includes('"k":1,"k":2');
        if (repeated !== undefined || nestedRepeat) {
          expect(result.ok, text).toBe(false);
          if (!result.ok) {
            const issue = JSON.stringify(result.issues);
            expect(issue).toContain('duplicate key');
            // The first repeat in the text is named: a top-level one, or `k` in `meta`.
            const named = [repeated, nestedRepeat ? 'k' : undefined].filter((k) => k !== undefined);
            expect(
              named.some((k) =>
                issue.includes(`duplicate key ${JSON.stringify(JSON.stringify(k)).slice(1, -1)}`),
              ),
              issue,
            ).toBe(true);
          }
          return;
        }
        expect(result.ok, text).toBe(true);
        if (!result.ok) return;
        const extra = result.report.extra ?? {};
        const unknownNames = names.filter((n) => !isStyledModelled(n));
        expect(Object.keys(extra).sort(), text).toEqual([...unknownNames].sort());
        for (const [k, v] of fields)
          if (unknownNames.includes(k)) expect(JSON.stringify(extra[k])).toBe(JSON.stringify(JSON.parse(v)));
      }),
      { numRuns: 400 },
    );
  });

  it('a snake_case record giving an unknown key twice is quarantined, not loaded with the first value', () => {
    const text =
      '{"id":"S1","status":"SUBMITTED","destination":"ROAD_CONTROL","created_at":"2024-03-01T07:00:00Z",' +
      '"note":1,"note":2,"tail":"kept"}';
    const result = validateWireLine(text, JSON.parse(text) as unknown);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.issues).toEqual([expect.objectContaining({ path: 'note' })]);
  });

  it('a record giving its id twice in another style names the repeat, not a missing status', () => {
    const text =
      '{"ID":"E2","ID":"E3","status":"SUBMITTED","destination":"ROAD_CONTROL","createdAt":"2024-03-01T07:00:00Z"}';
    const result = validateWireLine(text, JSON.parse(text) as unknown);
    expect(result.ok).toBe(false);
    if (!result.ok)
      expect(result.issues).toEqual([expect.objectContaining({ path: 'ID', code: 'conflicting_values' })]);
  });
});

function isStyledModelled(name: string): boolean {
  return (
    Object.keys(VALUES).some((key) => styles(key).includes(name)) ||
    ['CREATED_AT', 'Created At'].includes(name)
  );
}

describe('a CSV header with columns in another style', () => {
  const CELLS: Record<string, (row: number) => string> = {
    id: (row) => `r${row}`,
    status: () => 'SUBMITTED',
    destination: () => 'ROAD_CONTROL',
    createdAt: () => '2024-01-01T00:00:00Z',
  };
  const header = fc.record({
    names: fc.tuple(...Object.keys(CELLS).map((key) => fc.constantFrom(...styles(key)))),
    repeat: fc.subarray(Object.keys(CELLS), { maxLength: 2 }),
    agree: fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }),
  });

  it('a column repeated under the same name is one field when its cells agree, as a wire name is (property)', () => {
    fc.assert(
      fc.property(header, ({ names, repeat, agree }) => {
        const keys = Object.keys(CELLS);
        const columns = [
          ...keys.map((key, i) => ({ key, name: names[i]! })),
          ...repeat.map((key) => ({ key, name: names[keys.indexOf(key)]! })),
        ];
        const rows = agree.map((same, r) =>
          columns.map(({ key }, c) => (c >= keys.length && !same ? 'other' : CELLS[key]!(r))),
        );
        const body = [columns.map((c) => c.name), ...rows].map((cells) => cells.join(',')).join('\r\n');
        const parsed = parseCsvPage(Buffer.from(`${body}\r\n`), {
          page: 1,
          maxRecordBytes: 1 << 20,
          rejectRawMaxBytes: 1 << 16,
          url: 'http://up/reports.csv',
        });
        expect(parsed.records).toHaveLength(rows.length);
        parsed.records.forEach((record, r) => {
          if (record.kind === 'malformed') {
            expect(agree[r] === false && repeat.length > 0, JSON.stringify(record.issues)).toBe(true);
            expect(repeat).toContain(record.issues[0]!.path);
            return;
          }
          expect(agree[r] || repeat.length === 0).toBe(true);
          const result = validateCsvReport(record.value as Record<string, string | null>);
          expect(result.ok, JSON.stringify(result)).toBe(true);
          if (result.ok) expect(result.report.id).toBe(`r${r}`);
        });
      }),
      { numRuns: 300 },
    );
  });

  it('an id given twice under one restyled key is no readable id of a broken line', () => {
    expect(readableJsonId(Buffer.from('{"ID":"E2","ID":"E3","status":'))).toBeUndefined();
    expect(readableJsonId(Buffer.from('{"ID":"E2","status":'))).toBe('E2');
  });
});

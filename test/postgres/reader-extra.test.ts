import { writeFileSync } from 'node:fs';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WIRE_FIELDS } from '../../src/schema/wire-format.js';
import { loadDataset } from '../../src/simulator/load-dataset.js';
import { publishToPostgres } from '../../src/warehouse/postgres/publish-postgres.js';
import { pgQuery } from '../helpers/pg-parity.js';
import { postgresForSuite } from '../helpers/postgres.js';
import { startTestPgReader, startTestReader } from '../helpers/reader.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

/**
 * The reader on PostgreSQL serves the upstream's unknown fields (`extra`) as received, byte for byte as the
 * DuckDB reader does: keys in the order sent (not jsonb's shorter-first order), numbers as written (`1.0`,
 * `1e2`), nested objects as sent; the CSV export's extra columns in the same first-seen order.
 */

const postgres = postgresForSuite();

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

/** The public paths whose bodies carry `extra`: list pages, GeoJSON, NDJSON, CSV pages. */
const PATHS = [
  '/reports?pageSize=1000',
  '/reports?pageSize=2&page=2',
  '/reports.geojson',
  '/reports.ndjson',
  '/reports.csv?pageSize=10000',
  '/reports.csv?pageSize=2&page=2',
];

/** One NDJSON report line of the upstream, `extras` (a JSON object's members as text) after the known fields. */
function reportLine(i: number, extras: string): string {
  const day = String(1 + (i % 28)).padStart(2, '0');
  const at = `2024-03-${day}T${String(i % 24).padStart(2, '0')}:00:00Z`;
  return (
    `{"id":"X${i}","status":"SUBMITTED","destination":"ROAD_CONTROL","category":"POTHOLE",` +
    `"description":"Bericht ${i}","location":{"lat":50.9,"lng":6.9},"address":"Hohe Straße ${i}",` +
    `"createdAt":"${at}","updatedAt":"${at}"${extras === '' ? '' : `,${extras}`}}`
  );
}

/** Starts the simulator on the NDJSON `lines` (a file under the test's temp folder named `name`). */
async function simulatorOf(lines: string[], name: string) {
  const file = `${tmp.dir}/${name}.ndjson`;
  writeFileSync(file, `${lines.join('\n')}\n`);
  return startTestSimulator({ dataset: await loadDataset(file) });
}

/**
 * Syncs the NDJSON `lines` into a new warehouse and publishes it to the schema `db`: in one full publish,
 * or (`full` false) by a change set after a first publish of one report without extras. Returns each
 * path's body from both readers.
 */
async function bothReaders(
  db: { url: string; schema: string },
  lines: string[],
  run: string,
  full: boolean,
): Promise<Array<{ path: string; duck: string; pg: string; status: number }>> {
  const sim = await simulatorOf(full ? lines : [reportLine(0, '')], `${run}-a`);
  const config = testConfig(sim.url, `${tmp.dir}/${run}.duckdb`, { readerCacheBytes: 0 });
  const warehouse = await openTestWarehouse(config);
  try {
    const [first] = await syncTargetOnce(warehouse, config, 'ndjson');
    expect(first?.counters.inserted).toBe(full ? lines.length : 1);
    expect((await publishToPostgres(warehouse, db)).mode).toBe('full');
    if (!full) {
      const next = await simulatorOf([reportLine(0, ''), ...lines], `${run}-b`);
      const [second] = await syncTargetOnce(warehouse, { ...config, baseUrl: next.url }, 'ndjson');
      expect(second?.counters.inserted).toBe(lines.length);
      const published = await publishToPostgres(warehouse, db);
      expect(published.mode).toBe('changes');
      expect(published.tables.report_rows?.refused).toBe(0);
    }
    const duck = await startTestReader(warehouse, config);
    const pg = await startTestPgReader(db, config);
    try {
      const out = [];
      for (const path of PATHS) {
        const [a, b] = await Promise.all([fetch(duck.api(path)), fetch(pg.api(path))]);
        expect(b.status, path).toBe(a.status);
        expect(b.headers.get('content-type'), path).toBe(a.headers.get('content-type'));
        out.push({ path, duck: await a.text(), pg: await b.text(), status: a.status });
      }
      return out;
    } finally {
      await pg.close();
      await duck.close();
    }
  } finally {
    warehouse.close();
  }
}

/** A JSON number as an upstream may write it: trailing zeros, exponents, big integers, negative zero. */
const numberText = fc.oneof(
  fc.constantFrom('1.0', '1e2', '1E+2', '-0', '0.10', '12345678901234567890', '1.5e-7', '100', '2.50E-3'),
  fc
    .tuple(
      fc.integer({ min: -9999, max: 9999 }),
      fc.nat({ max: 3 }),
      fc.option(fc.integer({ min: -20, max: 20 })),
    )
    .map(
      ([n, zeros, exp]) => `${n}${zeros > 0 ? `.${'0'.repeat(zeros)}` : ''}${exp === null ? '' : `e${exp}`}`,
    ),
);

/** Text PostgreSQL can store (no U+0000, no lone surrogate: such rows are refused, see nul.test.ts). */
const storable = (s: string) => !s.includes('\u0000') && !/\p{Cs}/u.test(s);

/** Keys: some shared between reports (first-seen order of CSV columns), long before short, unicode. */
const key = fc.oneof(
  fc.constantFrom('zz', 'a', 'long_key_first', 'é', 'Straße', '名前', '😀', 'ab', ''),
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'grapheme', maxLength: 6 }),
);
const extraKey = key.filter((k) => storable(k) && !(WIRE_FIELDS as readonly string[]).includes(k));

const { value: jsonValue } = fc.letrec<{ value: string }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    numberText,
    fc
      .string({ unit: 'grapheme', maxLength: 8 })
      .filter(storable)
      .map((s) => JSON.stringify(s)),
    fc.constantFrom('true', 'false', 'null'),
    fc.array(tie('value'), { maxLength: 3 }).map((items) => `[${items.join(',')}]`),
    fc
      .uniqueArray(fc.tuple(key.filter(storable), tie('value')), { selector: ([k]) => k, maxLength: 3 })
      .map((members) => `{${members.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`),
  ),
}));

/** An extra object's members as text, keys distinct (a repeated key is quarantined, docs/sources.md). */
const extraMembers = fc
  .uniqueArray(fc.tuple(extraKey, jsonValue), { selector: ([k]) => k, maxLength: 5 })
  .map((members) => members.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(','));

describe('unknown upstream fields on the reader on PostgreSQL', () => {
  it('come byte-exact as the DuckDB reader serves them: key order and number text as received', async (ctx) => {
    const db = await postgres.database(ctx);
    const lines = [
      reportLine(1, '"long_key_first":1.0,"a":"x","é":{"zz":1e2,"b":[1.50,-0,{"yy":true,"x":null}]}'),
      reportLine(2, '"zz":12345678901234567890,"a":2.50E-3,"new_column":"ß"'),
      reportLine(3, ''),
      reportLine(4, '"😀":[],"ab":{},"":"leer","a":100'),
    ];
    const bodies = await bothReaders(db, lines, 'fixture', true);
    for (const { path, duck, pg, status } of bodies) {
      expect(status, path).toBe(200);
      expect(pg, path).toBe(duck);
    }
    const ndjson = bodies.find((b) => b.path === '/reports.ndjson')!.pg;
    expect(ndjson).toContain(
      '"long_key_first":1.0,"a":"x","é":{"zz":1e2,"b":[1.50,-0,{"yy":true,"x":null}]}',
    );
    const csv = bodies.find((b) => b.path === '/reports.csv?pageSize=10000')!.pg;
    expect(csv.slice(0, csv.indexOf('\r\n'))).toMatch(
      /,updatedAt,long_key_first,a,é,zz,new_column,😀,ab,""$/,
    );

    // Rows published before the `json` column existed have none there: the reader falls back to `extra`
    // (jsonb's order and numbers) until a full publish fills it.
    await pgQuery(db.url, db.schema, 'UPDATE report_rows SET extra_json = NULL');
    const config = testConfig('http://127.0.0.1:9', `${tmp.dir}/fixture.duckdb`, { readerCacheBytes: 0 });
    const ndjsonOf = async () => {
      const reader = await startTestPgReader(db, config);
      try {
        return await (await fetch(reader.api('/reports.ndjson'))).text();
      } finally {
        await reader.close();
      }
    };
    expect(await ndjsonOf()).toContain(
      '"a":"x","é":{"b":[1.50,0,{"x":null,"yy":true}],"zz":100},"long_key_first":1.0}',
    );
    const warehouse = await openTestWarehouse(config);
    try {
      expect((await publishToPostgres(warehouse, { ...db, full: true })).mode).toBe('full');
    } finally {
      warehouse.close();
    }
    expect(await ndjsonOf()).toBe(ndjson);
  });

  it('holding a number jsonb cannot hold (1e200000) keep their report out of PostgreSQL with the reason, and the publish goes on', async (ctx) => {
    const db = await postgres.database(ctx);
    const lines = [
      reportLine(1, '"big":1e200000'),
      reportLine(2, '"tiny":[1,{"x":1.5e-16383}],"text":"1e200000"'),
      reportLine(3, '"edge":1e131071,"small":1e-16383,"zero":0e999999,"text":"1e200000"'),
    ];
    const sim = await simulatorOf(lines, 'numbers');
    const config = testConfig(sim.url, `${tmp.dir}/numbers.duckdb`, { readerCacheBytes: 0 });
    const warehouse = await openTestWarehouse(config);
    try {
      const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
      expect(run?.counters.inserted).toBe(3);
      const published = await publishToPostgres(warehouse, db);
      expect(published.tables.report_rows).toEqual({ rows: 1, refused: 2 });
    } finally {
      warehouse.close();
    }
    const refused = await pgQuery<{ row_key: string; reason: string }>(
      db.url,
      db.schema,
      `SELECT row_key, reason FROM publish_refused WHERE table_name = 'report_rows' ORDER BY row_key`,
    );
    expect(refused.map((r) => r.row_key)).toEqual(['["X1"]', '["X2"]']);
    for (const r of refused) expect(r.reason).toMatch(/number jsonb cannot hold in extra: /);
    const kept = await pgQuery<{ id: string; extra_json: string }>(
      db.url,
      db.schema,
      'SELECT id, extra_json::text AS extra_json FROM report_rows',
    );
    expect(kept).toEqual([
      { id: 'X3', extra_json: '{"edge":1e131071,"small":1e-16383,"zero":0e999999,"text":"1e200000"}' },
    ]);
  });

  it('property: for generated extras, every body of the reader on PostgreSQL equals the DuckDB reader’s', async (ctx) => {
    const db = await postgres.database(ctx);
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(extraMembers, { minLength: 1, maxLength: 6 }), async (extras) => {
        run++;
        const lines = extras.map((members, i) => reportLine(i + 1, members));
        const schema = `${db.schema}_p${run}`;
        for (const { path, duck, pg } of await bothReaders({ ...db, schema }, lines, `p${run}`, false)) {
          expect(pg, path).toBe(duck);
        }
      }),
      { numRuns: 8 },
    );
  });
});

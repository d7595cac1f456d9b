import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseCsvPage } from '../../src/extract/csv.js';
import { csvProjectionHash } from '../../src/schema/csv-projection.js';
import { validateCsvReport } from '../../src/schema/report.js';
import { contentHash, type Report } from '../../src/schema/wire-format.js';
import { validateWireLine } from '../../src/schema/wire-line.js';
import { startRawServer } from '../helpers/raw-server.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';
import {
  csvExport,
  csvStyle,
  jsonStyle,
  modelReport,
  pythonFloat,
  reportJson,
  type CsvStyle,
  type JsonStyle,
  type ModelReport,
} from '../helpers/writer-model.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const reports = fc
  .integer({ min: 1, max: 6 })
  .chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => modelReport(i))));

function readJson(r: ModelReport, style: JsonStyle): Report {
  const text = reportJson(r, style);
  const result = validateWireLine(text, JSON.parse(text) as unknown);
  if (!result.ok) throw new Error(`${text}: ${JSON.stringify(result.issues)}`);
  return result.report;
}

function readCsv(all: readonly ModelReport[], style: CsvStyle): Report[] {
  const page = parseCsvPage(Buffer.from(csvExport(all, style)), {
    page: 1,
    maxRecordBytes: 1 << 20,
    rejectRawMaxBytes: 1 << 16,
    url: 'http://up/reports.csv',
  });
  return page.records.map((record) => {
    if (record.kind !== 'value') throw new Error(`${record.raw}: ${JSON.stringify(record.issues)}`);
    const result = validateCsvReport(record.value as Record<string, string | null>);
    if (!result.ok) throw new Error(`${record.raw}: ${JSON.stringify(result.issues)}`);
    return result.report;
  });
}

const projection = (r: Report) => csvProjectionHash(r, contentHash(r));

describe('a report read through CSV equals its JSON reading, whatever wrote the CSV', () => {
  it('models Python floats as repr writes them', () => {
    expect([1, 0.1, 1e-5, 1e16, 1e15, 2.5, -0, 123456.789, 1e-4, 5e-324].map(pythonFloat)).toEqual([
      '1.0',
      '0.1',
      '1e-05',
      '1e+16',
      '1000000000000000.0',
      '2.5',
      '-0.0',
      '123456.789',
      '0.0001',
      '5e-324',
    ]);
  });

  it('has one projection for the JSON reading and the CSV reading of any writer', () => {
    fc.assert(
      fc.property(reports, jsonStyle, csvStyle, (all, json, csv) => {
        const fromCsv = readCsv(all, csv);
        all.forEach((r, i) => expect(projection(fromCsv[i]!), r.id).toBe(projection(readJson(r, json))));
      }),
      { numRuns: 400 },
    );
  });

  it('has another projection once the report changed in a way a CSV row shows', () => {
    fc.assert(
      fc.property(reports, csvStyle, fc.nat(), (all, csv, pick) => {
        const before = readCsv(all, csv);
        const changed = all.map((r, i) => (i === pick % all.length ? change(r, pick) : r));
        const after = readCsv(changed, csv);
        all.forEach((r, i) => {
          const same = i !== pick % all.length;
          expect(projection(after[i]!) === projection(before[i]!), r.id).toBe(same);
        });
      }),
      { numRuns: 300 },
    );
  });

  it('makes no version in any sequence of NDJSON, CSV and recent runs over an unchanged upstream, one after a change', async () => {
    let round = 0;
    await fc.assert(
      fc.asyncProperty(
        reports,
        jsonStyle,
        csvStyle,
        fc.array(fc.constantFrom('ndjson' as const, 'csv' as const, 'recent' as const), {
          minLength: 2,
          maxLength: 5,
        }),
        fc.option(fc.tuple(fc.nat(), fc.nat()), { nil: undefined }),
        async (initial, json, csv, targets, changeAt) => {
          let data = initial;
          const up = await startRawServer((req, res) => {
            const url = new URL(req.url ?? '/', 'http://x');
            const send = (type: string, body: string) =>
              res.writeHead(200, { 'content-type': type }).end(body);
            if (url.pathname.endsWith('/stats')) return send('application/json', `{"total": ${data.length}}`);
            if (url.pathname.endsWith('.ndjson'))
              return send('application/x-ndjson', data.map((r) => `${reportJson(r, json)}\n`).join(''));
            const page = url.searchParams.get('page');
            if (url.pathname.endsWith('.csv')) {
              const body = csvExport(page === '1' ? data : [], csv);
              return send('text/csv; charset=utf-8', body);
            }
            send(
              'application/json',
              `[${page === '1' ? data.map((r) => reportJson(r, json)).join(', ') : ''}]`,
            );
          });
          const config = testConfig(up.url, join(tmp.dir, `w${round++}.duckdb`), {
            conditionalExports: false,
          });
          const warehouse = await openTestWarehouse(config);
          const changedAt = changeAt === undefined ? undefined : 1 + (changeAt[0] % (targets.length - 1));
          const changed = changeAt === undefined ? undefined : changeAt[1] % initial.length;
          try {
            for (const [k, target] of targets.entries()) {
              if (k === changedAt) data = data.map((r, i) => (i === changed ? change(r, changeAt![1]) : r));
              const [run] = await syncTargetOnce(warehouse, config, target);
              expect(run?.status, `${target}: ${run?.error?.message}`).toBe('succeeded');
              expect(run?.counters.recordsRejected, target).toBe(0);
            }
            const versions = await query(
              warehouse,
              `SELECT id, count(*)::INTEGER AS n FROM report_versions GROUP BY id ORDER BY id`,
            );
            // A change is a version once a run sees it: any run, but for a field the report did not have,
            // which a `recent` run leaves to the full exports (recent-patch.ts) unless a CSV run wrote the
            // report last (a CSV reading cannot tell which fields it has): then it may or may not be one.
            const seen = (r: ModelReport): boolean | 'maybe' =>
              changeAt === undefined ||
              changeAt[1] % 3 === 0 ||
              r.extras.some(([k]) => k === (changeAt[1] % 3 === 1 ? 'score' : 'note')) ||
              targets.slice(changedAt).some((t) => t !== 'recent') ||
              (targets.slice(0, changedAt).includes('csv') ? 'maybe' : false);
            // After a JSON run the warehouse holds the JSON reading itself (what CSV could not say put back),
            // of the change when a run saw it.
            if (targets[targets.length - 1] !== 'csv') {
              const stored = await query(
                warehouse,
                `SELECT id, category, description, content_hash FROM reports ORDER BY id`,
              );
              const reading = (r: ModelReport) => {
                const report = readJson(r, json);
                const { category, description } = report;
                return { id: r.id, category, description, content_hash: contentHash(report) };
              };
              const read = data.map((r, i) => {
                const before = reading(initial[i]!);
                if (i !== changed || seen(initial[i]!) === true) return reading(r);
                if (seen(initial[i]!) === false) return before;
                const after = reading(r);
                const got = stored.find((s) => s.id === r.id);
                return got?.content_hash === after.content_hash ? after : before;
              });
              expect(stored).toEqual(read.sort((a, b) => (a.id < b.id ? -1 : 1)));
            }
            const counted = (r: ModelReport, i: number) => {
              if (i !== changed || seen(r) === false) return 1;
              if (seen(r) === true) return 2;
              return versions.find((v) => v.id === r.id)?.n === 1 ? 1 : 2;
            };
            expect(versions).toEqual(
              initial.map((r, i) => ({ id: r.id, n: counted(r, i) })).sort((a, b) => (a.id < b.id ? -1 : 1)),
            );
          } finally {
            warehouse.close();
            await up.close();
          }
        },
      ),
      { numRuns: 15, endOnFailure: true }, // no shrinking: each try is several pipeline runs
    );
  }, 600_000);
});

/** A change a CSV row shows: another status, another number, or a new text field. */
function change(r: ModelReport, pick: number): ModelReport {
  switch (pick % 3) {
    case 0:
      return { ...r, status: r.status === 'SUBMITTED' ? 'IN_PROGRESS' : 'SUBMITTED' };
    case 1:
      return { ...r, extras: [...r.extras.filter(([k]) => k !== 'score'), ['score', { int: 424242n }]] };
    default:
      return { ...r, extras: [...r.extras.filter(([k]) => k !== 'note'), ['note', 'changed upstream']] };
  }
}

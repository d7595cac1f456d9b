import type { CsvQuery } from '../schema/public-query.js';
import { CSV_COLUMNS } from '../schema/wire-format.js';
import { toCsvRecords } from '../schema/to-csv-records.js';
import type { CsvCell } from '../schema/report-csv-cells.js';
import { BodySink, hasDeliveryFaults } from './body-sink.js';
import { csvCells } from './csv-cells.js';
import { cachePath, serveCached, teeToCache } from './export-cache.js';
import type { CsvWart, FaultOf } from './faults.js';
import { hasRecordFaults, withRecordFaults, type BodyRecord } from './record-faults.js';
import { ifNoneMatchHits, sendNotModified } from './respond.js';
import {
  CSV_EXPORT_PATH,
  responseValidators,
  validatorHeaders,
  type BodyFaults,
  type RouteContext,
} from './route-context.js';

const CRLF = '\r\n';
const DESCRIPTION = CSV_COLUMNS.indexOf('description');
// Rows are serialised in batches: one csv-stringify call per batch keeps a 10,000-row page cheap.
const BATCH = 500;

/**
 * `GET /reports.csv`: `302` to the file's real location ({@link CSV_EXPORT_PATH}) with the query kept as
 * it came (docs/upstream-contract.md: "Clients may need to follow an HTTP redirect"; docs/sources.md).
 */
export function redirectCsv(ctx: RouteContext): void {
  const location = `${ctx.url.origin}${CSV_EXPORT_PATH}${ctx.url.search}`;
  ctx.res.writeHead(302, { Location: location, 'Content-Type': 'text/plain; charset=utf-8' });
  ctx.res.end(ctx.head ? undefined : `Found: ${location}\n`);
}

/**
 * One page of the CSV export (upstream contract rule 2: `pageSize` rows per page; `page` 1-based). Every page starts
 * with the header row (`CSV_COLUMNS`, then the dataset's extra columns), then the entries
 * `(page-1)*pageSize …` of the export in dataset order, warts included (csv-cells.ts says how).
 * RFC 4180 quoting and CRLF after every record (toCsvRecords). `Link: <next>; rel="next"` while a later
 * page exists; `ETag`/`Last-Modified` of the export version on every page, 304 on a matching
 * `If-None-Match`. A page past the end holds the header only.
 *
 * With `exportCacheDir`, a page served whole without any body fault (and not regenerated) is also written
 * there, keyed by `ETag`, `pageSize` and `page`, and later requests for the same page of the same data
 * state get that file (with `Content-Length`; the headers are built per request as above, so `Link` keeps
 * the origin the client addressed). Same reason as the NDJSON export cache (serve-ndjson.ts): the benchmark
 * then measures the sync, not the simulator rendering a 5,000-row page (~60–80 ms of one of the machine's
 * two cores) on every request. `HEAD` and 304 answers are unchanged.
 */
export async function serveCsvPage(ctx: RouteContext, query: CsvQuery): Promise<void> {
  const { req, res, data, faults } = ctx;
  const validators = responseValidators(ctx);
  if (ctx.regeneration === 0 && validators.etag !== '' && ifNoneMatchHits(req, validators.etag)) {
    sendNotModified(res, validators);
    return;
  }
  const { pageSize } = query;
  // The capPageSize fault: the server serves fewer rows than asked, and pages by what it serves.
  const size = Math.min(pageSize, faults.capPageSize ?? pageSize);
  // The emptyPage fault: a header-only page, the data one page further on.
  const empty = faults.emptyPages.includes(query.page);
  const dataPage = query.page - faults.emptyPages.filter((p) => p < query.page).length;
  // The ignorePage fault: the body is page 1, but Link is built from the page asked for (a real bug's shape).
  const page = faults.ignorePage ? 1 : dataPage;
  const headers: Record<string, string> = {
    'Content-Type': 'text/csv; charset=utf-8',
    ...validatorHeaders(validators),
    'Cache-Control': 'no-cache',
  };
  if ((empty ? dataPage - 1 : dataPage) * size < data.exportCount) {
    headers.Link = `<${ctx.url.origin}${CSV_EXPORT_PATH}?pageSize=${pageSize}&page=${query.page + 1}>; rel="next"`;
  }
  if (ctx.head) {
    res.writeHead(200, headers);
    res.end();
    return;
  }
  const cached =
    ctx.exportCacheDir !== undefined && ctx.regeneration === 0 && !hasBodyFaults(faults)
      ? cachePath(ctx.exportCacheDir, validators.etag, `csv-${pageSize}-${page}.csv`)
      : undefined;
  if (cached !== undefined && (await serveCached(res, headers, cached))) return;
  const columns = [...CSV_COLUMNS, ...data.extraColumns];
  const entries = empty ? [] : data.exportEntries((page - 1) * size, size, ctx.regeneration);
  const pieces = csvPieces(columns, withRecordFaults(entries, faults), faults.csvWarts, data.extraColumns);
  const sink = BodySink.open(res, 200, headers, faults);
  await sink.writeAll(cached === undefined ? pieces : teeToCache(pieces, cached));
  await sink.end();
}

/**
 * True when any fault shapes this body (byte-level, record-level, CSV warts, `ignorePage`, `regenerate`):
 * such a body is never cached, nor served from the cache.
 */
function hasBodyFaults(faults: BodyFaults): boolean {
  return (
    hasDeliveryFaults(faults) ||
    hasRecordFaults(faults) ||
    faults.csvWarts.length > 0 ||
    faults.ignorePage ||
    faults.regenerate ||
    faults.noValidators ||
    faults.capPageSize !== undefined ||
    faults.emptyPages.length > 0
  );
}

function* csvPieces(
  columns: string[],
  records: Iterable<BodyRecord>,
  warts: ReadonlyArray<FaultOf<'csvWart'>>,
  extraColumns: readonly string[],
): Generator<string> {
  if (warts.some((w) => w.wart === 'bom')) yield '\uFEFF';
  yield serialize([columns]);
  const rowWarts = warts.filter((w) => w.wart !== 'bom');
  let batch: CsvCell[][] = [];
  let index = 0;
  for (const record of records) {
    const cells = csvCells(record, extraColumns);
    const wart = rowWarts.find((w) => selects(w, index));
    index++;
    if (wart === undefined) {
      batch.push(cells);
      if (batch.length >= BATCH) {
        yield serialize(batch);
        batch = [];
      }
      continue;
    }
    if (batch.length > 0) yield serialize(batch);
    batch = [];
    yield brokenRow(cells, wart.wart);
  }
  if (batch.length > 0) yield serialize(batch);
}

/** Whether a row wart hits the 0-based data row `index` of the page (default: row 1). */
function selects(wart: FaultOf<'csvWart'>, index: number): boolean {
  if (wart.at?.includes(index)) return true;
  if (wart.every !== undefined) return (index + 1) % wart.every === 0;
  return wart.at === undefined && index === 1;
}

function serialize(rows: CsvCell[][]): string {
  return toCsvRecords(rows);
}

/** The row, broken as the wart says (see faults.ts `csvWart`). */
function brokenRow(cells: CsvCell[], wart: CsvWart): string {
  const before = cells.slice(0, DESCRIPTION);
  const description = cells[DESCRIPTION] ?? '';
  const after = cells.slice(DESCRIPTION + 1);
  const join = (part: CsvCell[]) => serialize([part]).slice(0, -CRLF.length);
  switch (wart) {
    case 'unclosedQuote':
      // The quote opens and never closes: a parser swallows every later row into this field.
      return `${join(before)},"${description.replace(/"/g, "'")},${join(after)}${CRLF}`;
    case 'strayQuote': {
      const plain = description.replace(/[",\r\n]/g, ' ') || 'stray';
      const mid = Math.ceil(plain.length / 2);
      return `${join(before)},${plain.slice(0, mid)}"${plain.slice(mid)},${join(after)}${CRLF}`;
    }
    case 'raggedRow':
      return serialize([cells.slice(0, -1)]);
    case 'mixedNewlines':
      return `${serialize([cells]).slice(0, -CRLF.length)}\n`;
    case 'blankLines':
      return `${serialize([cells])}${CRLF}`;
    case 'bom':
      return serialize([cells]);
  }
}

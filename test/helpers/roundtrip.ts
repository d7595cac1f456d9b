import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import type { ConfigOverrides } from '../../src/config/config.js';
import type { RunSummary } from '../../src/sync/run-sync.js';
import type { SyncTarget } from '../../src/sync/sync-targets.js';
import { csvCell } from '../../src/schema/report-csv-cells.js';
import { toCsvRecords } from '../../src/schema/to-csv-records.js';
import { startRawServer } from './raw-server.js';
import { startTestReader } from './reader.js';
import { openTestWarehouse, query, syncTargetOnce, testConfig } from './sync.js';

/** A coordinate as a JSON value in NDJSON, as a CSV cell, and the number it names. */
export interface Degrees {
  json: string;
  cell: string;
  value: number;
}

/** A timestamp as sent, and the instant the warehouse must hold (`toISOString()`). */
export interface Stamp {
  text: string;
  iso: string;
}

/** One record as an upstream sends it, with what the warehouse and the reader must hold of it. */
export interface Probe {
  /** The `id` as a JSON value in the NDJSON line (`"a b"`, `12345678901234567890`). */
  idJson: string;
  /** The `id` as the CSV cell writes it. */
  idCell: string;
  /** The id the warehouse must store. */
  id: string;
  status: string;
  destination: string;
  category: string | null;
  description: string | null;
  address: string | null;
  location: { lat: Degrees; lng: Degrees } | null;
  createdAt: Stamp;
  updatedAt: Stamp | null;
  /** Unknown fields: key and the canonical JSON text of the value (no white space, minimal escapes). */
  extras: Array<[string, string]>;
  /** Other keys of the `location` object (an `accuracy`), as `extras`; kept as `location.<key>`. */
  locationExtras: Array<[string, string]>;
}

/** The unknown fields the warehouse keeps of `p`: its own, then those of its location. */
function keptExtras(p: Probe): Array<[string, string]> {
  const located = p.location === null ? [] : p.locationExtras;
  return [...p.extras, ...located.map(([k, v]): [string, string] => [`location.${k}`, v])];
}

/** The probe's NDJSON line (and list item), as the upstream writes it. */
export function probeLine(p: Probe): string {
  const s = JSON.stringify;
  const more = p.locationExtras.map(([k, v]) => `,${s(k)}:${v}`).join('');
  const location = p.location ? `{"lat":${p.location.lat.json},"lng":${p.location.lng.json}${more}}` : 'null';
  const known =
    `"id":${p.idJson},"status":${s(p.status)},"destination":${s(p.destination)},"category":${s(p.category)},` +
    `"description":${s(p.description)},"location":${location},"address":${s(p.address)},` +
    `"createdAt":${s(p.createdAt.text)},"updatedAt":${p.updatedAt ? s(p.updatedAt.text) : 'null'}`;
  return `{${known}${p.extras.map(([k, v]) => `,${s(k)}:${v}`).join('')}}`;
}

/** The line the reader must serve for the probe: canonical values, UTC milliseconds, extras as sent. */
export function expectedLine(p: Probe): string {
  const s = JSON.stringify;
  const location = p.location
    ? `{"lat":${s(p.location.lat.value)},"lng":${s(p.location.lng.value)}}`
    : 'null';
  const known =
    `"id":${s(p.id)},"status":${s(p.status)},"destination":${s(p.destination)},"category":${s(p.category)},` +
    `"description":${s(p.description)},"location":${location},"address":${s(p.address)},` +
    `"createdAt":${s(p.createdAt.iso)},"updatedAt":${s((p.updatedAt ?? p.createdAt).iso)}`;
  return `{${known}${keptExtras(p)
    .map(([k, v]) => `,${s(k)}:${v}`)
    .join('')}}`;
}

/** An extra value as a CSV cell (strings as they are, anything else its JSON text: the simulator's rule). */
function extraCell(json: string): string | null {
  const value = JSON.parse(json) as unknown;
  if (value === null) return null;
  return typeof value === 'string' ? value : typeof value === 'number' ? json : csvCell(value);
}

/** The probes as one CSV export (the simulator's format: known columns, then extra columns first seen first). */
export function probeCsvRows(probes: readonly Probe[]): { header: string[]; rows: (string | null)[][] } {
  const extraColumns = [...new Set(probes.flatMap((p) => keptExtras(p).map(([k]) => k)))];
  const header = [
    ...['id', 'status', 'destination', 'category', 'description', 'lat', 'lng', 'address'],
    ...['createdAt', 'updatedAt', ...extraColumns],
  ];
  const rows = probes.map((p) => {
    const extras = new Map(keptExtras(p));
    return [
      p.idCell,
      p.status,
      p.destination,
      p.category,
      p.description,
      p.location?.lat.cell ?? null,
      p.location?.lng.cell ?? null,
      p.address,
      p.createdAt.text,
      p.updatedAt?.text ?? null,
      ...extraColumns.map((k) => (extras.has(k) ? extraCell(extras.get(k)!) : null)),
    ];
  });
  return { header, rows };
}

/**
 * Serves `probes` on 127.0.0.1 as an upstream would: the NDJSON export, the paged CSV export (ETag,
 * `/stats` total), and the list (newest first, by the instant of `createdAt`, then id).
 */
export async function startProbeServer(probes: readonly Probe[]) {
  const lines = probes.map(probeLine);
  const { header, rows } = probeCsvRows(probes);
  const newestFirst = probes
    .map((p, i) => ({ p, line: lines[i]! }))
    .sort((a, b) =>
      a.p.createdAt.iso !== b.p.createdAt.iso
        ? a.p.createdAt.iso < b.p.createdAt.iso
          ? 1
          : -1
        : a.p.id < b.p.id
          ? -1
          : 1,
    );
  return startRawServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const etag = { etag: '"v1"' };
    if (url.pathname.endsWith('/stats')) {
      res.writeHead(200, { 'content-type': 'application/json', ...etag });
      return void res.end(JSON.stringify({ total: probes.length }));
    }
    if (url.pathname.endsWith('.ndjson')) {
      res.writeHead(200, { 'content-type': 'application/x-ndjson', ...etag });
      return void res.end(lines.map((l) => `${l}\n`).join(''));
    }
    const size = Number(url.searchParams.get('pageSize') ?? 50);
    const page = Number(url.searchParams.get('page') ?? 1);
    if (url.pathname.endsWith('.csv')) {
      const slice = rows.slice((page - 1) * size, page * size);
      res.writeHead(200, { 'content-type': 'text/csv; charset=utf-8', ...etag });
      return void res.end(toCsvRecords([header, ...slice]));
    }
    const slice = newestFirst.slice((page - 1) * size, page * size);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(`[${slice.map((r) => r.line).join(',')}]`);
  });
}

/** What one sync target left, and what the reader over it serves. */
export interface Readback {
  runs: RunSummary[];
  /** Stored reports (SQL), by id. */
  stored: Map<string, Record<string, unknown>>;
  rejected: Record<string, unknown>[];
  /** Reader bodies. */
  list: string;
  ndjson: string;
  geojson: string;
  csv: string[][];
}

const STORED = `SELECT id, status, destination, category, description, lat, lng, address,
  strftime(created_at, '%Y-%m-%dT%H:%M:%S.%gZ') AS created, strftime(updated_at, '%Y-%m-%dT%H:%M:%S.%gZ') AS updated,
  extra::VARCHAR AS extra FROM reports WHERE removed_at IS NULL`;

/** Syncs `target` from `upstream` into a fresh warehouse in `dir`, then reads it back through SQL and the reader. */
export async function syncAndRead(
  upstream: string,
  dir: string,
  target: SyncTarget,
  overrides: ConfigOverrides = {},
): Promise<Readback> {
  const config = testConfig(upstream, join(dir, `${target}-${Math.random()}.duckdb`), {
    csvPageSize: 3,
    recentPageSize: 3,
    // Every reject is compared by the test: none fails the run before it can be read.
    maxRejectRatio: 1,
    ...overrides,
  });
  const warehouse = await openTestWarehouse(config);
  try {
    const runs = await syncTargetOnce(warehouse, config, target);
    const rows = await query(warehouse, STORED);
    const rejected = await query(
      warehouse,
      'SELECT record_id, issues, raw, line, page, "row" FROM rejected_records',
    );
    const reader = await startTestReader(warehouse, config);
    try {
      const get = async (path: string) => (await fetch(reader.api(path))).text();
      const csv: string[][] = [];
      for (let page = 1; ; page++) {
        const body = await get(`/reports.csv?pageSize=1000&page=${page}`);
        const parsed = parse(body, { relax_column_count: false }) as string[][];
        csv.push(...(page === 1 ? parsed : parsed.slice(1)));
        if (parsed.length <= 1 || parsed.length < 1001) break;
      }
      return {
        runs,
        stored: new Map(rows.map((r) => [r.id as string, r])),
        rejected,
        list: await get('/reports?pageSize=1000'),
        ndjson: await get('/reports.ndjson'),
        geojson: await get('/reports.geojson'),
        csv,
      };
    } finally {
      await reader.close();
    }
  } finally {
    warehouse.close();
  }
}

import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { validateCsvReport } from '../../src/schema/report.js';
import { CSV_COLUMNS, toWire } from '../../src/schema/wire-format.js';
import { simulatorForSuite } from '../helpers/simulator.js';

const HEADER = [...CSV_COLUMNS, 'channel', 'photos', 'tags'];

describe('GET /reports.csv', () => {
  const sim = simulatorForSuite({ fixture: 'small.ndjson' });

  it('redirects to the export location, keeping the query', async () => {
    const res = await fetch(sim().api('/reports.csv?pageSize=5&page=2'), { redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe(sim().api('/exports/reports.csv?pageSize=5&page=2'));
    await res.arrayBuffer();
  });

  it('pages with a header row on every page and Link rel="next" until the last page', async () => {
    const seen: string[][] = [];
    let url: string | null = sim().api('/reports.csv?pageSize=5');
    const etags = new Set<string | null>();
    let pages = 0;
    while (url) {
      const res: Response = await fetch(url);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
      etags.add(res.headers.get('etag'));
      expect(res.headers.get('last-modified')).toBe('Wed, 06 Mar 2024 21:10:00 GMT');
      const rows = parse(await res.text(), { bom: true, relax_column_count: false }) as string[][];
      expect(rows[0]).toEqual(HEADER);
      seen.push(...rows.slice(1));
      pages++;
      const link = res.headers.get('link');
      url = link ? (/^<([^>]+)>; rel="next"$/.exec(link)?.[1] ?? null) : null;
    }
    expect(pages).toBe(3);
    expect(seen).toHaveLength(14);
    expect(etags.size).toBe(1);
    // A page past the end holds the header only.
    const past = await fetch(sim().api('/exports/reports.csv?pageSize=5&page=4'));
    expect(await past.text()).toBe(`${HEADER.join(',')}\r\n`);
    expect(past.headers.get('link')).toBeNull();
  });

  it('round-trips through csv-parse: quoting, CRLF inside a field, non-ASCII, extras, warts', async () => {
    const res = await fetch(sim().api('/reports.csv?pageSize=100'));
    const text = await res.text();
    expect(text.endsWith('\r\n')).toBe(true);
    // Read as the sync reads it (PostgreSQL COPY CSV): an unquoted empty cell is NULL, a quoted "" is ''.
    const rows = parse(text, {
      columns: true,
      cast: (value: string, context: { quoting: boolean }) =>
        value === '' && !context.quoting ? null : value,
    }) as Array<Record<string, string | null>>;
    expect(rows).toHaveLength(14);
    const byId = new Map(rows.map((r) => [r.id, r]));
    const a2 = byId.get('A2');
    expect(a2?.description).toBe('Zeile eins\r\nZeile zwei, mit Komma und "Anführungszeichen"');
    expect(a2?.photos).toBe('2');
    expect(a2?.lat).toBeNull();
    expect(byId.get('A7')?.description).toBe('Straße gesperrt – Umleitung über Königsallee 🚧');
    expect(byId.get('A5')).toMatchObject({ lat: '52.52', lng: '13.405', tags: '["night","dark"]' });
    // Valid rows load to the same canonical report as the list serves; extras come back as text.
    const list = (await (await fetch(sim().api('/reports?pageSize=100'))).json()) as Array<
      Record<string, unknown>
    >;
    expect(list).toHaveLength(10);
    for (const wire of list) {
      const v = validateCsvReport(byId.get(String(wire.id)) ?? {});
      expect(v.ok).toBe(true);
      if (!v.ok) continue;
      const { channel, photos: _p, tags: _t, ...core } = wire;
      const fromCsv = toWire({ ...v.report, extra: null });
      expect(fromCsv).toEqual(core);
      expect(v.report.extra?.channel).toBe(channel);
    }
    // Warts: a JSON wart keeps its fields as they are; a non-JSON wart lands in description.
    expect(byId.get('W-LAT')).toMatchObject({ lat: '200.5', lng: '6.9' });
    expect(byId.get('W-DATE')?.createdAt).toBe('16.02.2024, 21:26 Uhr');
    expect(rows[3]?.id).toBeNull();
    expect(rows[3]?.description).toBe('no id here');
    expect(rows[10]).toMatchObject({ id: null, description: '{"id": "broken", "status":' });
    for (const id of ['W-LAT', 'W-DATE']) expect(validateCsvReport(byId.get(id) ?? {}).ok).toBe(false);
  });

  it('answers 304 on a page whose ETag matches', async () => {
    const first = await fetch(sim().api('/exports/reports.csv?pageSize=5&page=2'));
    await first.arrayBuffer();
    const res = await fetch(sim().api('/exports/reports.csv?pageSize=5&page=2'), {
      headers: { 'If-None-Match': first.headers.get('etag') ?? '' },
    });
    expect(res.status).toBe(304);
  });

  it('validates the query before redirecting', async () => {
    const res = await fetch(sim().api('/reports.csv?pageSize=10001'), { redirect: 'manual' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { details: unknown } }).error.details).toEqual([
      { param: 'pageSize', message: 'must be an integer from 1 to 10000' },
    ]);
  });
});

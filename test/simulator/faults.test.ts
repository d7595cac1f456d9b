import { get, type IncomingHttpHeaders } from 'node:http';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { validateWireReport } from '../../src/schema/report.js';
import { type Report } from '../../src/schema/wire-format.js';
import { startTestSimulator } from '../helpers/simulator.js';

/** A GET through node:http that reports what arrived even when the connection breaks. */
function rawGet(
  url: string,
  headers: Record<string, string> = {},
): Promise<{
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  error?: string;
  complete: boolean;
}> {
  return new Promise((resolve) => {
    const req = get(url, { headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      let error: string | undefined;
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', (err) => (error = err.message));
      res.on('close', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks),
          error,
          complete: res.complete,
        }),
      );
    });
    req.on('error', (err) =>
      resolve({ status: 0, headers: {}, body: Buffer.alloc(0), error: err.message, complete: false }),
    );
  });
}

const lines = (text: string) => text.split('\n').filter((l) => l !== '');
const parses = (line: string) => {
  try {
    JSON.parse(line);
    return true;
  } catch {
    return false;
  }
};

describe('fault: latency', () => {
  it('waits before the headers, for the first N requests only', async () => {
    const sim = await startTestSimulator({ faults: ['list:latency=150,times=1'] });
    let t = performance.now();
    expect((await fetch(sim.api('/reports'))).status).toBe(200);
    expect(performance.now() - t).toBeGreaterThanOrEqual(140);
    t = performance.now();
    await (await fetch(sim.api('/reports'))).arrayBuffer();
    expect(performance.now() - t).toBeLessThan(140);
  });
});

describe('fault: stall', () => {
  it('sends the headers, then nothing; close() still ends the connection', async () => {
    const sim = await startTestSimulator({ faults: ['ndjson:stall'] });
    const res = await fetch(sim.api('/reports.ndjson'), { signal: AbortSignal.timeout(300) });
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();
    const pending = rawGet(sim.api('/reports.ndjson'));
    await new Promise((r) => setTimeout(r, 50));
    await sim.close();
    const broken = await pending;
    expect(broken.complete).toBe(false);
  });

  it('can stall after some body bytes', async () => {
    const sim = await startTestSimulator({ generate: { n: 200 }, faults: ['ndjson:stall=1000'] });
    const pending = rawGet(sim.api('/reports.ndjson'));
    await new Promise((r) => setTimeout(r, 150));
    await sim.close();
    const got = await pending;
    expect(got.body.length).toBe(1000);
    expect(got.complete).toBe(false);
  });
});

describe('fault: status', () => {
  it('answers 429 with Retry-After in seconds for the first N requests', async () => {
    const sim = await startTestSimulator({ faults: ['ndjson:status=429,times=2,retryAfter=3'] });
    for (let i = 0; i < 2; i++) {
      const res = await fetch(sim.api('/reports.ndjson'));
      expect(res.status).toBe(429);
      expect(res.headers.get('retry-after')).toBe('3');
      expect(await res.json()).toEqual({
        error: { code: 'RATE_LIMITED', message: 'Simulated 429 (fault on ndjson).' },
      });
    }
    const ok = await fetch(sim.api('/reports.ndjson'));
    expect(ok.status).toBe(200);
    await ok.arrayBuffer();
  });

  it('answers 503 with Retry-After as an HTTP date', async () => {
    const sim = await startTestSimulator({ faults: ['all:status=503,retryAfter=30,retryAfterForm=date'] });
    const res = await fetch(sim.api('/reports/stats'));
    expect(res.status).toBe(503);
    const when = Date.parse(res.headers.get('retry-after') ?? '');
    expect(when - Date.now()).toBeGreaterThan(25_000);
    expect(when - Date.now()).toBeLessThan(31_000);
  });
});

describe('fault: reset', () => {
  it('resets the connection after N body bytes', async () => {
    const sim = await startTestSimulator({ generate: { n: 300 }, faults: ['ndjson:reset=5000,times=1'] });
    const got = await rawGet(sim.api('/reports.ndjson'));
    expect(got.status).toBe(200);
    expect(got.complete).toBe(false);
    expect(got.error ?? '').toMatch(/ECONNRESET|aborted/);
    expect(got.body.length).toBeLessThanOrEqual(5000);
    // times=1: the retry gets the whole export.
    expect(lines(await (await fetch(sim.api('/reports.ndjson'))).text())).toHaveLength(300);
  });
});

describe('fault: cut (close-delimited body)', () => {
  it('sends no length and no chunking, then closes cleanly in the middle of a line', async () => {
    const sim = await startTestSimulator({ generate: { n: 300 }, faults: ['ndjson:cut=3000'] });
    const got = await rawGet(sim.api('/reports.ndjson'));
    expect(got.status).toBe(200);
    expect(got.headers['content-length']).toBeUndefined();
    expect(got.headers['transfer-encoding']).toBeUndefined();
    expect(got.headers.connection).toBe('close');
    expect(got.headers.etag).toMatch(/^"gen300-/);
    // HTTP cannot tell: the body simply ended.
    expect(got.error).toBeUndefined();
    const text = got.body.toString('utf8');
    expect(got.body.length).toBeGreaterThanOrEqual(3000);
    expect(got.body.length).toBeLessThan(3000 + 600);
    expect(text.endsWith('\n')).toBe(false);
    const all = text.split('\n');
    expect(all.slice(0, -1).every(parses)).toBe(true);
    expect(parses(all.at(-1) ?? '')).toBe(false);
  });

  it('cuts the last line when the body is shorter than the threshold', async () => {
    const sim = await startTestSimulator({ faults: ['ndjson:cut=100000000'] });
    const text = (await rawGet(sim.api('/reports.ndjson'))).body.toString('utf8');
    expect(text.split('\n')).toHaveLength(14);
    expect(parses(text.split('\n').at(-1) ?? '')).toBe(false);
  });
});

describe('fault: chunkedCut', () => {
  it('closes a chunked body without its terminating chunk', async () => {
    const sim = await startTestSimulator({ generate: { n: 300 }, faults: ['ndjson:chunkedCut=4000'] });
    const got = await rawGet(sim.api('/reports.ndjson'));
    expect(got.headers['transfer-encoding']).toBe('chunked');
    expect(got.complete).toBe(false);
    expect(got.body.length).toBe(4000);
    await expect(fetch(sim.api('/reports.ndjson')).then((r) => r.text())).rejects.toThrow();
  });
});

describe('fault: malformed', () => {
  it('inserts a non-JSON line after every k records', async () => {
    const sim = await startTestSimulator({ generate: { n: 20 }, faults: ['ndjson:malformed=5'] });
    const got = lines(await (await fetch(sim.api('/reports.ndjson'))).text());
    expect(got).toHaveLength(24);
    expect(got.map((l, i) => (parses(l) ? -1 : i)).filter((i) => i >= 0)).toEqual([5, 11, 17, 23]);
  });

  it('inserts them before given positions, for the first N requests', async () => {
    const sim = await startTestSimulator({
      generate: { n: 10 },
      faults: ['ndjson:malformed,at=0+4,times=1'],
    });
    const got = lines(await (await fetch(sim.api('/reports.ndjson'))).text());
    expect(got.map(parses)).toEqual([
      false,
      true,
      true,
      true,
      true,
      false,
      true,
      true,
      true,
      true,
      true,
      true,
    ]);
    expect(lines(await (await fetch(sim.api('/reports.ndjson'))).text()).every(parses)).toBe(true);
  });
});

describe('fault: csvWart', () => {
  const page = async (wart: string) => {
    const sim = await startTestSimulator({ generate: { n: 6 }, faults: [`csv:csvWart=${wart}`] });
    // Bytes, not res.text(): the WHATWG decoder would strip a BOM.
    return Buffer.from(await (await fetch(sim.api('/reports.csv?pageSize=5'))).arrayBuffer()).toString(
      'utf8',
    );
  };

  it('unclosedQuote: a field opens a quote that its row never closes', async () => {
    const text = await page('unclosedQuote');
    expect(text.split('\r\n')[2]).toMatch(/,"[^"]*,/);
    // Strict parsing fails; skipping bad records silently loses rows (DESIGN.md §4: reconcile counts).
    expect(() => parse(text, { columns: true })).toThrow(/quote/i);
    const skipped = parse(text, { columns: true, skip_records_with_error: true }) as unknown[];
    expect(skipped.length).toBeLessThan(5);
  });

  it('strayQuote: a quote inside an unquoted field', async () => {
    const text = await page('strayQuote');
    expect(() => parse(text, { columns: true })).toThrow(/quote/i);
  });

  it('raggedRow: a row with a column missing', async () => {
    const text = await page('raggedRow');
    expect(() => parse(text, { columns: true })).toThrow(/Invalid Record Length/i);
  });

  it('bom: the page starts with a byte order mark', async () => {
    const text = await page('bom');
    expect(text.startsWith('\uFEFFid,status,')).toBe(true);
    expect(parse(text, { columns: true, bom: true })).toHaveLength(5);
  });

  it('mixedNewlines: some records end with LF instead of CRLF', async () => {
    const text = await page('mixedNewlines');
    expect(text.split('\r\n')).toHaveLength(6); // header + 5 rows, one of them LF-terminated
    expect(/[^\r]\n/.test(text)).toBe(true);
  });

  it('blankLines: an empty line between records', async () => {
    const text = await page('blankLines');
    expect(text).toContain('\r\n\r\n');
    expect(parse(text, { columns: true, skip_empty_lines: true })).toHaveLength(5);
  });
});

describe('fault: giant', () => {
  it('gives one record a field of several MB', async () => {
    const sim = await startTestSimulator({ generate: { n: 5 }, faults: ['ndjson:giant=3000000,at=2'] });
    const got = lines(await (await fetch(sim.api('/reports.ndjson'))).text());
    expect(got).toHaveLength(5);
    expect(Buffer.byteLength(got[2] ?? '')).toBeGreaterThan(3_000_000);
    expect((JSON.parse(got[2] ?? '') as { description: string }).description).toHaveLength(3_000_000);
    expect(Buffer.byteLength(got[1] ?? '')).toBeLessThan(1000);
  });

  it('does the same to a CSV field', async () => {
    const sim = await startTestSimulator({ generate: { n: 5 }, faults: ['csv:giant=2000000'] });
    const rows = parse(await (await fetch(sim.api('/reports.csv'))).text(), { columns: true }) as Array<
      Record<string, string>
    >;
    expect(rows[1]?.description).toHaveLength(2_000_000);
  });
});

describe('fault: duplicates', () => {
  it('emits older and tied versions next to the current one; latest updatedAt then last seen wins', async () => {
    const sim = await startTestSimulator({ generate: { n: 30, seed: 2 }, faults: ['ndjson:duplicates=3'] });
    const got = lines(await (await fetch(sim.api('/reports.ndjson'))).text()).map((l) => {
      const v = validateWireReport(JSON.parse(l));
      if (!v.ok) throw new Error('invalid');
      return v.report;
    });
    expect(got).toHaveLength(40);
    const byId = new Map<string, Report[]>();
    for (const r of got) byId.set(r.id, [...(byId.get(r.id) ?? []), r]);
    const dups = [...byId.values()].filter((v) => v.length === 2) as Array<[Report, Report]>;
    expect(dups).toHaveLength(10);
    const patterns = dups.map(([a, b]) =>
      a.updatedAt > b.updatedAt ? 'newer-first' : a.updatedAt < b.updatedAt ? 'older-first' : 'tie',
    );
    expect(new Set(patterns)).toEqual(new Set(['newer-first', 'older-first', 'tie']));
    // Dedupe by the warehouse rule gives exactly the current data.
    const winners = new Map<string, Report>();
    for (const r of got) {
      const w = winners.get(r.id);
      if (!w || r.updatedAt >= w.updatedAt) winners.set(r.id, r);
    }
    for (const [id, r] of winners) expect(r).toEqual(sim.dataset.getReport(id));
  });
});

describe('fault: redirect', () => {
  it('loop: A → loop hop → A → …', async () => {
    const sim = await startTestSimulator({ faults: ['ndjson:redirect=loop'] });
    const first = await fetch(sim.api('/reports.ndjson'), { redirect: 'manual' });
    expect(first.status).toBe(302);
    const hop = first.headers.get('location') ?? '';
    expect(hop).toBe(sim.api(`/redirect-loop?to=${encodeURIComponent('/api/v1/public/reports.ndjson')}`));
    const back = await fetch(hop, { redirect: 'manual' });
    expect(back.headers.get('location')).toBe(sim.api('/reports.ndjson'));
    await expect(fetch(sim.api('/reports.ndjson'))).rejects.toThrow();
  });

  it('crossOrigin: same path and query on the other simulator, whose log shows the headers it got', async () => {
    const other = await startTestSimulator({ fixture: 'small.ndjson' });
    const sim = await startTestSimulator({ faults: [`csv:redirect=crossOrigin,to=${other.url}`] });
    const res = await fetch(sim.api('/reports.csv?pageSize=3'), { redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe(other.api('/reports.csv?pageSize=3'));
    const followed = await fetch(sim.api('/reports.csv?pageSize=3'), {
      headers: { 'X-API-Key': 'secret-1' },
    });
    expect(followed.status).toBe(200);
    expect(parse(await followed.text(), { columns: true })).toHaveLength(3);
    const seen = other.requests().filter((r) => r.path.startsWith('/api/v1/public/reports.csv'));
    expect(seen).toHaveLength(1);
    // fetch itself forwards custom headers across origins: exactly what the sync client must not do.
    expect(seen[0]?.headers['x-api-key']).toBe('secret-1');
  });

  it('crossOrigin with a port: the same host, another port', async () => {
    const sim = await startTestSimulator({ faults: ['list:redirect=crossOrigin,to=1,code=307'] });
    const res = await fetch(sim.api('/reports?page=2'), { redirect: 'manual' });
    expect(res.status).toBe(307);
    expect(res.headers.get('location')).toBe('http://127.0.0.1:1/api/v1/public/reports?page=2');
  });

  it('login: ends on an HTML sign-in page with 200', async () => {
    const sim = await startTestSimulator({ faults: ['ndjson:redirect=login'] });
    const res = await fetch(sim.api('/reports.ndjson'));
    expect(res.status).toBe(200);
    expect(res.url).toContain('/login?next=');
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await res.text()).toContain('<form');
  });
});

describe('fault: regenerate', () => {
  it('serves a new export on every request: new ETag, different body, same records, Range ignored', async () => {
    const sim = await startTestSimulator({ generate: { n: 50 }, faults: ['ndjson:regenerate'] });
    const a = await fetch(sim.api('/reports.ndjson'));
    const b = await fetch(sim.api('/reports.ndjson'), { headers: { Range: 'bytes=100-' } });
    expect(b.status).toBe(200);
    expect(a.headers.get('etag')).not.toBe(b.headers.get('etag'));
    const [ta, tb] = [await a.text(), await b.text()];
    expect(ta).not.toBe(tb);
    expect(lines(ta).sort()).toEqual(lines(tb).sort());
    const c = await fetch(sim.api('/reports.ndjson'), {
      headers: { 'If-None-Match': b.headers.get('etag') ?? '' },
    });
    expect(c.status).toBe(200);
    await c.arrayBuffer();
  });
});

describe('fault: ignorePage', () => {
  it('serves page 1 whatever page is asked, while Link keeps pointing on', async () => {
    const sim = await startTestSimulator({ generate: { n: 30 }, faults: ['csv:ignorePage'] });
    const p1 = await fetch(sim.api('/reports.csv?pageSize=10&page=1'));
    const p2 = await fetch(sim.api('/reports.csv?pageSize=10&page=2'));
    expect(await p2.text()).toBe(await p1.text());
    expect(p2.headers.get('link')).toContain('page=3');
  });
});

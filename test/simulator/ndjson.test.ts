import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { validateWireReport } from '../../src/schema/report.js';
import { toWire } from '../../src/schema/wire-format.js';
import { fixturePath, simulatorForSuite, startTestSimulator } from '../helpers/simulator.js';

describe('GET /reports.ndjson', () => {
  const sim = simulatorForSuite({ fixture: 'small.ndjson' });
  const fileLines = readFileSync(fixturePath('small.ndjson'), 'utf8')
    .split(/\r?\n/)
    .filter((l) => l !== '');

  it('streams every entry in file order: valid ones in canonical wire form, warts as their raw line', async () => {
    const res = await fetch(sim().api('/reports.ndjson'));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/x-ndjson');
    expect(res.headers.get('transfer-encoding')).toBe('chunked');
    const lines = (await res.text()).split('\n');
    expect(lines.pop()).toBe('');
    expect(lines).toHaveLength(fileLines.length);
    lines.forEach((line, i) => {
      const original = fileLines[i] as string;
      let parsed: unknown;
      try {
        parsed = JSON.parse(original);
      } catch {
        parsed = undefined;
      }
      const v = validateWireReport(parsed);
      expect(line).toBe(v.ok ? JSON.stringify(toWire(v.report)) : original);
    });
    // Text survives: umlauts, the CRLF inside a field (escaped in JSON), a character outside the BMP.
    expect(lines[1]).toContain('Zeile eins\\r\\nZeile zwei');
    expect(lines[9]).toContain('Königsallee 🚧');
  });

  it('carries ETag and Last-Modified, and answers 304 to a matching If-None-Match', async () => {
    const res = await fetch(sim().api('/reports.ndjson'));
    await res.arrayBuffer();
    const etag = res.headers.get('etag');
    expect(etag).toMatch(/^"file-[0-9a-f]{12}-s1-d0"$/);
    expect(res.headers.get('last-modified')).toBe('Wed, 06 Mar 2024 21:10:00 GMT');
    const again = await fetch(sim().api('/reports.ndjson'), {
      headers: { 'If-None-Match': `W/${etag}, "other"` },
    });
    expect(again.status).toBe(304);
    expect(again.headers.get('etag')).toBe(etag);
    expect(await again.text()).toBe('');
    const stale = await fetch(sim().api('/reports.ndjson'), { headers: { 'If-None-Match': '"old"' } });
    expect(stale.status).toBe(200);
    await stale.arrayBuffer();
  });

  it('answers HEAD with the headers only', async () => {
    const res = await fetch(sim().api('/reports.ndjson'), { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(res.headers.get('etag')).toMatch(/^"file-/);
    expect(await res.text()).toBe('');
  });
});

describe('GET /reports.ndjson of a generated dataset', () => {
  it('streams a large export in many chunks without holding it (constant memory)', async () => {
    const sim = await startTestSimulator({ generate: { n: 100_000, seed: 9 } });
    const res = await fetch(sim.api('/reports.ndjson'));
    let bytes = 0;
    let lines = 0;
    let chunks = 0;
    const before = process.memoryUsage().rss;
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      chunks++;
      bytes += chunk.length;
      for (const b of chunk) if (b === 10) lines++;
    }
    expect(lines).toBe(100_000);
    expect(bytes).toBeGreaterThan(40_000_000);
    expect(chunks).toBeGreaterThan(100);
    // ~48 MB went through; a server that built the body would have grown by twice that (string + bytes).
    expect(process.memoryUsage().rss - before).toBeLessThan(80_000_000);
  });
});

import { describe, expect, it } from 'vitest';
import { ndjsonLines } from '../../src/sync/sources/ndjson-document.js';

/** A body whose first line is `{"id":"a","d":"xxx…` for `lineChunks` chunks of 64 KiB, counting what was pulled. */
function longFirstLine(lineChunks: number) {
  const pulled = { chunks: 0 };
  async function* body() {
    pulled.chunks++;
    yield Buffer.from('{"id":"a","d":"');
    for (let i = 0; i < lineChunks; i++) {
      pulled.chunks++;
      yield Buffer.alloc(64 * 1024, 'x');
    }
    pulled.chunks++;
    yield Buffer.from('"}\n{"id":"b"}\n');
  }
  return { body: body(), pulled };
}

describe('an NDJSON export typed as plain JSON', () => {
  it('holds at most REPORTS_MAX_RECORD_BYTES of its first line to decide: a longer one streams on', async () => {
    const { body, pulled } = longFirstLine(1000); // a 64 MB first line
    const lines = ndjsonLines(body, 'application/json', 'http://up/reports.ndjson', 1024 * 1024);
    const first = await lines.next();
    expect(first.done).toBe(false);
    // 1 MiB decided it: 16 chunks of 64 KiB and the opening one, not the 1,000 of the line.
    expect(pulled.chunks).toBeLessThanOrEqual(18);
    let bytes = (first.value as Uint8Array).length;
    for await (const chunk of lines) bytes += chunk.length;
    expect(bytes).toBe(15 + 1000 * 64 * 1024 + 14);
  });
});

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { startDecoders } from '../../src/normalize/decoders.js';
import { KnownLines } from '../../src/normalize/known-lines.js';
import { decodeNdjson } from '../../src/normalize/ndjson-decode.js';
import { SyncError } from '../../src/util/errors.js';

const MAX = 64; // REPORTS_MAX_RECORD_BYTES of these tests
const KEEP = 16;
const url = 'http://127.0.0.1/reports.ndjson';

async function* chunks(body: Buffer, cuts: number[]) {
  let at = 0;
  for (const cut of [...new Set(cuts.map((c) => c % (body.length + 1)))].sort((a, b) => a - b)) {
    yield body.subarray(at, cut);
    at = cut;
  }
  yield body.subarray(at);
}

const line = fc.oneof(
  fc.constant(''),
  fc.constant('   '),
  fc.constant('{"id":'),
  fc.constant('{"id":"a","status":"x"}'),
  fc.string({ maxLength: 20 }).map((s) => JSON.stringify({ id: s })),
  fc.nat({ max: 200 }).map((n) => JSON.stringify({ id: 'long', pad: 'y'.repeat(n) })),
  // Raw bytes, most of them not UTF-8 (0xEF left out: a first line could start with a BOM).
  fc
    .uint8Array({ minLength: 1, maxLength: 8 })
    .map((b) => Buffer.from(b.map((x) => (x === 0xef ? 0x41 : x))).toString('latin1')),
);

describe('decodeNdjson: every line travels in a block', () => {
  it('accounts for every non-blank line once, in a block, over-long and unterminated ones included (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(line, { maxLength: 12 }),
        fc.boolean(),
        fc.array(fc.nat(), { maxLength: 4 }),
        async (lines, finalNewline, cuts) => {
          const texts = lines.map((l) => l.replace(/[\r\n]/g, ''));
          const body = Buffer.from(
            texts.join('\n') + (finalNewline && texts.length > 0 ? '\n' : ''),
            'latin1',
          );
          const decoders = startDecoders(0, await KnownLines.empty('ndjson'), KEEP);
          const options = { maxRecordBytes: MAX, rejectRawMaxBytes: KEEP, url, decoders };
          let read = 0;
          const located: number[] = [];
          try {
            for await (const block of decodeNdjson(chunks(body, cuts), options)) {
              expect(block.read).toBe(block.loaded + block.rejected);
              read += block.read;
              located.push(...block.rejects.map((r) => r.location.line));
              const staged = Buffer.from(block.rows.bytes).toString('utf8').split('\n').filter(Boolean);
              located.push(...staged.map((l) => (JSON.parse(l) as { s: number }).s));
            }
          } catch (err) {
            // Only a last line without its newline that does not parse may end the read: a cut body.
            expect(err).toBeInstanceOf(SyncError);
            expect((err as SyncError).code).toBe('BODY_TRUNCATED');
            expect((err as SyncError).retry).toBe('export');
            expect(finalNewline).toBe(false);
            return;
          }
          const bytesOf = (t: string) => Buffer.byteLength(t, 'latin1');
          const expected = texts
            .map((t, i) => ({ t, line: i + 1 }))
            .filter(({ t }) => bytesOf(t) > MAX || !/^[ \t]*$/.test(t))
            .map(({ line }) => line);
          expect(read).toBe(expected.length);
          expect([...located].sort((a, b) => a - b)).toEqual(expected);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('quarantines an over-long line with its size, without keeping more than the kept bytes', async () => {
    const decoders = startDecoders(0, await KnownLines.empty('ndjson'), KEEP);
    const long = JSON.stringify({ id: 'x', pad: 'z'.repeat(10_000) });
    const blocks = [];
    for await (const b of decodeNdjson(chunks(Buffer.from(`${long}\n`), [5000]), {
      maxRecordBytes: MAX,
      rejectRawMaxBytes: KEEP,
      url,
      decoders,
    }))
      blocks.push(b);
    const [reject] = blocks.flatMap((b) => b.rejects);
    expect(reject).toMatchObject({ location: { line: 1 }, rawTruncated: true, rawBytes: long.length });
    expect(Buffer.byteLength(reject!.raw)).toBeLessThanOrEqual(KEEP);
  });
});

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { extractNdjson } from '../../src/extract/ndjson.js';
import type { Extracted } from '../../src/extract/record.js';
import { splitLines } from '../../src/extract/split-lines.js';
import { SyncError } from '../../src/util/errors.js';

async function* chunks(...parts: (string | Buffer)[]) {
  for (const p of parts) yield typeof p === 'string' ? Buffer.from(p) : p;
}

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

const opts = { maxRecordBytes: 1024, rejectRawMaxBytes: 16, url: 'http://127.0.0.1/x' };

describe('splitLines', () => {
  it('keeps physical line numbers across chunk borders, multi-byte characters and a BOM', async () => {
    const text = '\uFEFF{"a":"Köln"}\n\n{"b":1}\r\n{"c":"ü';
    const buf = Buffer.from(text);
    // Cut in the middle of the "ö" and the BOM.
    const lines = await collect(
      splitLines(chunks(buf.subarray(0, 2), buf.subarray(2, 12), buf.subarray(12)), {
        maxLineBytes: 100,
        keepBytes: 10,
      }),
    );
    expect(lines.map((l) => [l.lineNumber, l.text, l.terminated])).toEqual([
      [1, '{"a":"Köln"}', true],
      [2, '', true],
      [3, '{"b":1}\r', true],
      [4, '{"c":"ü', false],
    ]);
  });

  it('strips only a BOM before the first line, wherever the chunks are cut (property)', async () => {
    const F = '\uFEFF';
    const line = fc
      .array(fc.oneof(fc.constant(F), fc.constant('ü'), fc.string({ unit: 'grapheme', maxLength: 3 })), {
        maxLength: 5,
      })
      .map((parts) => parts.join('').replace(/[\r\n]/g, ''));
    await fc.assert(
      fc.asyncProperty(
        fc.boolean(),
        fc.array(line, { minLength: 1, maxLength: 5 }),
        fc.array(fc.nat(), { maxLength: 6 }),
        async (bom, texts, cuts) => {
          const buf = Buffer.from(`${bom ? F : ''}${texts.join('\n')}\n`);
          const at = [...new Set(cuts.map((c) => c % buf.length))].sort((a, b) => a - b);
          const parts = [0, ...at].map((start, i) => buf.subarray(start, at[i] ?? buf.length));
          const lines = await collect(splitLines(chunks(...parts), { maxLineBytes: 1000, keepBytes: 10 }));
          // Without a BOM, a first line that starts with U+FEFF starts with the same bytes as a BOM: the
          // body's first bytes are its encoding mark either way.
          const first = bom ? texts[0] : texts[0]?.replace(/^\uFEFF/, '');
          expect(lines.map((l) => l.text)).toEqual([first, ...texts.slice(1)]);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('does not buffer an over-long line past the kept bytes', async () => {
    const long = 'x'.repeat(5000);
    const lines = await collect(
      splitLines(chunks(long.slice(0, 2500), long.slice(2500), '\nok\n'), {
        maxLineBytes: 1000,
        keepBytes: 10,
      }),
    );
    expect(lines[0]).toMatchObject({ lineNumber: 1, overLimit: true, bytes: 5000, text: 'x'.repeat(10) });
    expect(lines[1]).toMatchObject({ lineNumber: 2, text: 'ok', overLimit: false });
  });
});

describe('extractNdjson', () => {
  it('turns malformed and over-long lines into quarantine units with their line numbers, skips blanks', async () => {
    const body = chunks(`{"id":1}\n\n{"id":\n   \n${'{"x":"' + 'y'.repeat(2000) + '"}'}\n{"id":2}\n`);
    const items: Extracted[] = await collect(extractNdjson(body, opts));
    expect(items.map((i) => [i.kind, i.kind === 'block' ? undefined : i.location.line])).toEqual([
      ['value', 1],
      ['malformed', 3],
      ['malformed', 5],
      ['value', 6],
    ]);
    const long = items[2];
    expect(long?.kind === 'malformed' && long.rawTruncated && long.rawBytes).toBe(2008);
  });

  it('accepts a last line without newline when it parses', async () => {
    const items = await collect(extractNdjson(chunks('{"id":1}\n{"id":2}'), opts));
    expect(items).toHaveLength(2);
  });

  it('reports a body cut mid-line as a retryable truncation', async () => {
    await expect(collect(extractNdjson(chunks('{"id":1}\n{"id":2,"sta'), opts))).rejects.toSatisfy(
      (e: unknown) => e instanceof SyncError && e.code === 'BODY_TRUNCATED' && e.retryable,
    );
  });
});

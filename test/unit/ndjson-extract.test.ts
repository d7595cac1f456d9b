import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { startDecoders } from '../../src/normalize/decoders.js';
import { KnownLines } from '../../src/normalize/known-lines.js';
import { decodeNdjson } from '../../src/normalize/ndjson-decode.js';
import type { DecodedBlock } from '../../src/normalize/reject.js';
import { LineSplitter, type Line, type SplitLinesOptions } from '../../src/extract/split-lines.js';
import { SyncError } from '../../src/util/errors.js';

async function* chunks(...parts: (string | Buffer)[]) {
  for (const p of parts) yield typeof p === 'string' ? Buffer.from(p) : p;
}

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

/** The lines a {@link LineSplitter} hands over for `chunks`, as plain objects (a whole line's text copied). */
async function* splitLines(chunks: AsyncIterable<Uint8Array>, options: SplitLinesOptions) {
  const splitter = new LineSplitter(options);
  const lines: Array<Pick<Line, 'lineNumber' | 'text' | 'bytes' | 'overLimit' | 'terminated'>> = [];
  const sink = {
    whole: (chunk: Buffer, start: number, end: number, lineNumber: number, bytes: number) =>
      lines.push({
        lineNumber,
        text: chunk.toString('utf8', start, end),
        bytes,
        overLimit: false,
        terminated: true,
      }),
    line: (line: Line) => lines.push(line),
  };
  for await (const chunk of chunks) splitter.push(chunk, sink);
  splitter.end(sink);
  yield* lines;
}

const opts = { maxRecordBytes: 1024, rejectRawMaxBytes: 16, url: 'http://127.0.0.1/x' };

/** The body decoded inline, as one list of its staged seqs and rejects (the blocks merged). */
async function decodeAll(body: AsyncIterable<Uint8Array>): Promise<DecodedBlock[]> {
  const decoders = startDecoders(0, await KnownLines.empty('ndjson'), opts.rejectRawMaxBytes);
  return collect(decodeNdjson(body, { ...opts, decoders }));
}

/** Line numbers of the staged rows of `blocks` (their `s` field, see staged-line.ts). */
function stagedLines(blocks: DecodedBlock[]): number[] {
  const text = blocks.map((b) => Buffer.from(b.rows.bytes).toString('utf8')).join('');
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => (JSON.parse(l) as { s: number }).s);
}

describe('LineSplitter', () => {
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

describe('decodeNdjson', () => {
  it('turns malformed and over-long lines into quarantine units with their line numbers, skips blanks', async () => {
    const body = chunks(`{"id":1}\n\n{"id":\n   \n${'{"x":"' + 'y'.repeat(2000) + '"}'}\n{"id":2}\n`);
    const blocks = await decodeAll(body);
    const rejects = blocks.flatMap((b) => b.rejects);
    // Lines 1 and 6 parse (and fail validation here: the decoder goes on to the schema); 3 and 5 never parse.
    const unreadable = rejects.filter((r) => !r.issues.some((i) => i.path !== ''));
    expect(unreadable.map((r) => r.location.line)).toEqual([3, 5]);
    expect([...stagedLines(blocks), ...rejects.map((r) => r.location.line)].sort()).toEqual([1, 3, 5, 6]);
    expect(blocks.reduce((n, b) => n + b.read, 0)).toBe(4);
    const long = unreadable[1];
    expect(long?.rawTruncated && long.rawBytes).toBe(2008);
  });

  it('accepts a last line without newline when it parses', async () => {
    const blocks = await decodeAll(chunks('{"id":1}\n{"id":2}'));
    expect(blocks.reduce((n, b) => n + b.read, 0)).toBe(2);
  });

  it('reports a body cut mid-line as a retryable truncation', async () => {
    await expect(decodeAll(chunks('{"id":1}\n{"id":2,"sta'))).rejects.toSatisfy(
      (e: unknown) => e instanceof SyncError && e.code === 'BODY_TRUNCATED' && e.retryable,
    );
  });
});

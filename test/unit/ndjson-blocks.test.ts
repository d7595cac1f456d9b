import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { startDecoders } from '../../src/normalize/decoders.js';
import { KnownLines } from '../../src/normalize/known-lines.js';
import { ndjsonBlocks } from '../../src/extract/ndjson.js';
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

describe('ndjsonBlocks: the bytes of every line', () => {
  // Lines of text: multi-byte characters, blanks, \r, and some longer than MAX.
  const text = fc.oneof(
    fc.string({ unit: 'grapheme', maxLength: 12 }),
    fc.constant(''),
    fc.constant('\r'),
    fc.nat({ max: 100 }).map((n) => 'ü'.repeat(n)),
  );

  /**
   * Yields `body` cut at `cuts`, each piece a copy that is overwritten as soon as the next one is asked for:
   * undici may hand out views on memory it reuses, so a line copied late would come out garbled.
   */
  async function* reusedChunks(body: Buffer, cuts: number[]) {
    for await (const piece of chunks(body, cuts)) {
      const copy = Buffer.from(piece);
      yield copy;
      copy.fill(0xff);
    }
  }

  it('hands over each line as the body holds it, whatever the chunks and block size (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.boolean(),
        fc.array(text, { maxLength: 14 }),
        fc.boolean(),
        fc.array(fc.nat(), { maxLength: 6 }),
        fc.integer({ min: 1, max: 300 }),
        async (bom, lines, finalNewline, cuts, blockBytes) => {
          const texts = lines.map((l) => l.replace(/\n/g, ''));
          const joined = texts.join('\n') + (finalNewline && texts.length > 0 ? '\n' : '');
          const body = Buffer.concat([Buffer.from(bom ? [0xef, 0xbb, 0xbf] : []), Buffer.from(joined)]);
          const got: Array<[number, string]> = [];
          const overLong: Array<[number, number]> = [];
          let unterminated = 0;
          const options = { maxRecordBytes: MAX, rejectRawMaxBytes: KEEP, url, blockBytes };
          for await (const block of ndjsonBlocks(reusedChunks(body, cuts), options)) {
            const bytes = Buffer.from(block.bytes);
            // A block stays within its size (lines with their `\n`) unless it holds a single longer line.
            if (block.count > 1) expect(block.bytes.length).toBeLessThanOrEqual(blockBytes);
            for (let i = 0; i < block.count; i++) {
              const line = bytes.subarray(block.offsets[i], block.offsets[i + 1]! - 1).toString('utf8');
              got.push([block.lineNumbers[i]!, line]);
            }
            overLong.push(...block.overLong.map((l): [number, number] => [l.lineNumber, l.bytes]));
            if (block.unterminated) unterminated++;
          }
          // The body's lines: a last empty piece (after a final line break, or of an empty body) is none.
          const pieces = body.toString('utf8').split('\n');
          if (pieces.at(-1) === '') pieces.pop();
          const expected = pieces.map((piece, i) => ({
            line: i + 1,
            // A first line's leading U+FEFF is the body's BOM (with or without `bom`, the same bytes).
            text: i === 0 ? piece.replace(/^\uFEFF/, '') : piece,
            bytes: Buffer.byteLength(piece),
          }));
          expect(got).toEqual(expected.filter((l) => l.bytes <= MAX).map((l) => [l.line, l.text]));
          expect(overLong).toEqual(expected.filter((l) => l.bytes > MAX).map((l) => [l.line, l.bytes]));
          const last = expected.at(-1);
          const cut = body.length > 0 && body[body.length - 1] !== 0x0a && last !== undefined;
          expect(unterminated).toBe(cut && last.bytes <= MAX ? 1 : 0);
        },
      ),
      { numRuns: 500 },
    );
  });
});

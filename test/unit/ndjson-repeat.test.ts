import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ndjsonBlocks } from '../../src/extract/ndjson.js';
import { RepeatedPageWatch } from '../../src/sync/sources/ndjson-repeat.js';

// A paged NDJSON export's pages compared by their records' ids (ndjson-repeat.ts), over generated pages:
// ids in order, whatever the lines' spacing, blank lines or the blocks they fall in.

/** One line for `id`: the id first and compact, spaced out, or after another key; `null`: no id. */
function lineOf(id: string | null, style: number, status: string): string {
  if (id === null) return JSON.stringify({ status, note: style });
  if (style === 1) return `{ "id" : ${JSON.stringify(id)}, "status": "${status}" }`;
  if (style === 2) return JSON.stringify({ status, id });
  return JSON.stringify({ id, status });
}

interface Line {
  id: string | null;
  style: number;
  status: string;
  blankAfter: boolean;
}

const page: fc.Arbitrary<Line[]> = fc.array(
  fc.record({
    id: fc.option(fc.constantFrom('a', 'b', 'c', 'é', 'a"b'), { nil: null, freq: 6 }),
    style: fc.integer({ min: 0, max: 2 }),
    status: fc.constantFrom('SUBMITTED', 'RESOLVED'),
    blankAfter: fc.boolean(),
  }),
  { maxLength: 8 },
);

async function* chunks(text: string): AsyncGenerator<Uint8Array> {
  const bytes = Buffer.from(text);
  for (let at = 0; at < bytes.length; at += 7) yield bytes.subarray(at, at + 7);
}

/** The lines that passed the watch for one page (its body read through small blocks). */
async function readPage(watch: RepeatedPageWatch, lines: Line[]) {
  const text = lines.map((l) => `${lineOf(l.id, l.style, l.status)}\n${l.blankAfter ? '  \n' : ''}`).join('');
  const options = {
    maxRecordBytes: 1000,
    rejectRawMaxBytes: 100,
    url: 'x',
    endChecked: true,
    blockBytes: 64,
  };
  let passed = 0;
  for await (const block of watch.filter(ndjsonBlocks(chunks(text), options))) passed += block.count;
  return passed;
}

describe('RepeatedPageWatch', () => {
  it('a page repeats the one before exactly when its ids (a line without one: its bytes) match in order; a repeat passes nothing, any other page everything (property)', async () => {
    await fc.assert(
      fc.asyncProperty(page, page, fc.boolean(), async (first, other, same) => {
        // The second page: the first one's ids in other spellings and statuses, or another page.
        const second = same
          ? first.map((l, i) => ({
              ...l,
              style: l.id === null ? l.style : (l.style + i + 1) % 3,
              status: 'RESOLVED',
            }))
          : other;
        const watch = new RepeatedPageWatch();
        await readPage(watch, first);
        expect(watch.repeated).toBe(false);
        watch.startPage();
        const passed = await readPage(watch, second);
        const key = (l: Line) => (l.id === null ? lineOf(null, l.style, l.status) : `id ${l.id}`);
        const expected =
          first.length > 0 && JSON.stringify(first.map(key)) === JSON.stringify(second.map(key));
        expect(watch.repeated).toBe(expected);
        const lines = second.length + second.filter((l) => l.blankAfter).length;
        expect(passed).toBe(expected ? 0 : lines);
      }),
      { numRuns: 500 },
    );
  });

  it('compares the ids of records keyed in another style (`ID`) as it compares `id`s', async () => {
    const pageOf = (status: string) =>
      ['a', 'b'].map((id) => `{"ID":"${id}","status":"${status}"}\n`).join('');
    const read = async (watch: RepeatedPageWatch, text: string) => {
      const options = { maxRecordBytes: 1000, rejectRawMaxBytes: 100, url: 'x', endChecked: true };
      for await (const block of watch.filter(ndjsonBlocks(chunks(text), options))) void block;
    };
    const watch = new RepeatedPageWatch();
    await read(watch, pageOf('SUBMITTED'));
    watch.startPage();
    await read(watch, pageOf('RESOLVED'));
    expect(watch.repeated).toBe(true);
  });
});

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bomEncoding, toUtf8, utf8Chunks } from '../../src/upstream/charset.js';

// A byte order mark decides the encoding over the declared label (WHATWG Encoding, "decode"): a body
// labelled `utf-16` but sent big-endian was read little-endian, as mojibake.

const URL = 'http://up/reports.ndjson';
const BOM = { 'utf-16be': [0xfe, 0xff], 'utf-16le': [0xff, 0xfe], 'utf-8': [0xef, 0xbb, 0xbf] } as const;

/** `text` in `encoding`, after that encoding's byte order mark. */
function encoded(text: string, encoding: keyof typeof BOM): Buffer {
  const le = Buffer.from(text, 'utf16le');
  const body = encoding === 'utf-8' ? Buffer.from(text) : encoding === 'utf-16le' ? le : le.swap16();
  return Buffer.concat([Buffer.from(BOM[encoding]), body]);
}

/** `body` cut into chunks at `cuts` (offsets, any order, repeats allowed). */
function chunked(body: Buffer, cuts: number[]): Buffer[] {
  const at = [...new Set(cuts.map((c) => c % (body.length + 1)))].sort((a, b) => a - b);
  return [0, ...at].map((start, i) => body.subarray(start, at[i] ?? body.length));
}

async function collect(chunks: AsyncIterable<Uint8Array>): Promise<string> {
  const out: Buffer[] = [];
  for await (const c of chunks) out.push(Buffer.from(c));
  return Buffer.concat(out).toString('utf8');
}

async function* iterate(chunks: Buffer[]): AsyncGenerator<Buffer> {
  for (const c of chunks) yield c;
}

// Well-formed text (no lone surrogates: UTF-8 cannot hold them).
const text = fc.string({ unit: 'grapheme', maxLength: 40 });
const label = fc.constantFrom(undefined, 'utf-8', 'utf-16', 'utf-16le', 'utf-16be', 'iso-8859-1');

describe('bodies with a byte order mark', () => {
  it('decode to their text whatever the label and however the chunks fall (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        text,
        fc.constantFrom('utf-16be' as const, 'utf-16le' as const, 'utf-8' as const),
        label,
        fc.array(fc.nat(), { maxLength: 6 }),
        async (t, encoding, charset, cuts) => {
          const body = encoded(t, encoding);
          // A UTF-8 mark stays for the parsers, which strip it; a UTF-16 one is the decoder's.
          const expected = encoding === 'utf-8' ? `\ufeff${t}` : t;
          expect(toUtf8(body, charset, URL).toString('utf8')).toBe(expected);
          expect(await collect(utf8Chunks(iterate(chunked(body, cuts)), charset, URL))).toBe(expected);
        },
      ),
    );
  });

  it('bodies without one keep to their label: UTF-8 passes through, ISO-8859-1 as WHATWG reads it', async () => {
    // Servers label windows-1252 text ISO-8859-1: its bytes 0x80–0x9F are characters, not C1 controls.
    const euro = Buffer.from([0x80, 0x20, 0x93, 0x61, 0x94, 0x20, 0xe9, 0xff]);
    expect(toUtf8(euro, 'iso-8859-1', URL).toString()).toBe('€ “a” éÿ');
    expect(await collect(utf8Chunks(iterate([euro.subarray(0, 1), euro.subarray(1)]), 'latin1', URL))).toBe(
      '€ “a” éÿ',
    );
    expect(bomEncoding(Buffer.from('{"a":1}'))).toBeUndefined();
    const latin1 = Buffer.from('Köln', 'latin1');
    expect(toUtf8(latin1, 'iso-8859-1', URL).toString()).toBe('Köln');
    expect(
      await collect(utf8Chunks(iterate([latin1.subarray(0, 1), latin1.subarray(1)]), 'latin1', URL)),
    ).toBe('Köln');
    const utf8 = Buffer.from('Köln 😀');
    expect(toUtf8(utf8, undefined, URL)).toBe(utf8);
    expect(await collect(utf8Chunks(iterate([utf8.subarray(0, 2), utf8.subarray(2)]), 'utf-8', URL))).toBe(
      'Köln 😀',
    );
    expect(await collect(utf8Chunks(iterate([]), undefined, URL))).toBe('');
  });
});

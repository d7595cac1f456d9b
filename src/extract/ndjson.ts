import JsonlParser from 'stream-json/jsonl/Parser.js';
import { SyncError } from '../util/errors.js';
import type { KnownLines } from '../sync/known-lines.js';
import type { Extracted } from './record.js';
import { splitLines } from './split-lines.js';

/** Bounds of {@link extractNdjson}, in bytes. */
export interface NdjsonOptions {
  /** Longest line parsed; a longer one is quarantined without being buffered whole. */
  maxRecordBytes: number;
  /** Raw text kept for a quarantined record. */
  rejectRawMaxBytes: number;
  /** Safe URL for error messages. */
  url: string;
  /** When given, each line is hashed first and a known line is yielded as `known`, unparsed. */
  knownLines?: KnownLines | undefined;
}

// stream-json's JSONL parse step (`JsonlParser.checkedParse`, the function behind its `errorIndicator`
// option) turns a bad line into a value instead of an exception (DESIGN.md §4: the default crashes the
// process). We split lines ourselves because its stream counts only non-empty lines (we need physical
// line numbers), has no line-length bound and cannot tell a cut last line from a bad one.
const checkedParse = (
  JsonlParser as unknown as {
    checkedParse: (input: string, reviver: undefined, indicator: (error: Error) => unknown) => unknown;
  }
).checkedParse;
const MALFORMED = Symbol('malformed');
let lastParseError = '';
const indicator = (error: Error) => {
  lastParseError = error.message;
  return MALFORMED;
};

/**
 * NDJSON body → {@link Extracted} units, one per non-blank line, in order. A BOM is stripped, blank lines
 * are skipped (their numbers still count), a malformed or over-long line becomes a `malformed` unit.
 *
 * @throws SyncError `BODY_TRUNCATED` (retryable) when the body's last line has no final newline and does
 *   not parse: a close-delimited body was cut mid-line (DESIGN.md §4).
 */
export async function* extractNdjson(
  body: AsyncIterable<Uint8Array>,
  options: NdjsonOptions,
): AsyncGenerator<Extracted> {
  for await (const line of splitLines(body, {
    maxLineBytes: options.maxRecordBytes,
    keepBytes: options.rejectRawMaxBytes,
  })) {
    const location = { line: line.lineNumber };
    if (line.overLimit) {
      yield {
        kind: 'malformed',
        location,
        raw: line.text,
        rawTruncated: true,
        rawBytes: line.bytes,
        issues: [
          {
            path: '',
            message: `line of ${line.bytes} bytes exceeds the ${options.maxRecordBytes}-byte limit`,
          },
        ],
      };
      continue;
    }
    if (line.raw ? isBlankBytes(line.raw) : isBlank(line.text)) continue;
    const check = line.terminated ? options.knownLines?.check(line.raw ?? line.text) : undefined;
    if (check?.known) {
      yield { kind: 'known', location, lineHash: check.hash };
      continue;
    }
    const value = checkedParse(line.text, undefined, indicator);
    if (value === MALFORMED) {
      if (!line.terminated) {
        throw new SyncError(
          'BODY_TRUNCATED',
          `The body of ${options.url} ended in the middle of line ${line.lineNumber} (connection closed early)`,
          { context: { url: options.url, line: line.lineNumber }, retryable: true },
        );
      }
      const cut = line.bytes > options.rejectRawMaxBytes;
      yield {
        kind: 'malformed',
        location,
        raw: cut ? Buffer.from(line.text).subarray(0, options.rejectRawMaxBytes).toString('utf8') : line.text,
        ...(cut ? { rawTruncated: true, rawBytes: line.bytes } : {}),
        issues: [{ path: '', message: `malformed JSON: ${lastParseError}` }],
      };
      continue;
    }
    yield {
      kind: 'value',
      location,
      raw: line.text,
      value,
      lineHash: check?.hash,
      lineDigest: check?.digest,
    };
  }
}

function isBlankBytes(raw: Buffer): boolean {
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i];
    if (c !== 0x20 && c !== 0x09 && c !== 0x0d) return false;
  }
  return true;
}

function isBlank(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x09 && c !== 0x0d) return false;
  }
  return true;
}

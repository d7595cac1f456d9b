import JsonlParser from 'stream-json/jsonl/Parser.js';
import { SyncError } from '../util/errors.js';
import type { Extracted } from './record.js';
import type { DecodedBlock } from './ndjson-block.js';
import { BlockPacker, type BlockDecoders } from './decoders.js';
import { splitLineBatches } from './split-lines.js';
import { firstInvalidUtf8, invalidUtf8Reject } from './utf8.js';

/** Bounds of {@link extractNdjson}, in bytes. */
export interface NdjsonOptions {
  /** Longest line parsed; a longer one is quarantined without being buffered whole. */
  maxRecordBytes: number;
  /** Raw text kept for a quarantined record. */
  rejectRawMaxBytes: number;
  /** Safe URL for error messages. */
  url: string;
  /**
   * When given, whole lines are packed into blocks and decoded by these (worker threads), yielded as
   * `block` units in body order; lines that end the body unterminated or pass the length limit are still
   * yielded one by one.
   */
  decoders?: BlockDecoders | undefined;
}

// Blocks decoding at once: enough to keep every worker busy, few enough to bound memory (~1 MiB each).
const MAX_BLOCKS_IN_FLIGHT = 6;

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

/** Parses one NDJSON line with stream-json's checked parse: the value, or the parser's error message. */
export function parseJsonLine(text: string): { value: unknown } | { error: string } {
  const value = checkedParse(text, undefined, indicator);
  return value === MALFORMED ? { error: lastParseError } : { value };
}

/**
 * NDJSON body → {@link Extracted} units, one per non-blank line (or one per block of lines with
 * `decoders`), in order. A BOM is stripped, blank lines are skipped (their numbers still count), a malformed
 * or over-long line becomes a `malformed` unit. Records carry their line number as `seq`.
 *
 * @throws SyncError `BODY_TRUNCATED` (retryable) when the body's last line has no final newline and does
 *   not parse: a close-delimited body was cut mid-line (DESIGN.md §4).
 */
export async function* extractNdjson(
  body: AsyncIterable<Uint8Array>,
  options: NdjsonOptions,
): AsyncGenerator<Extracted> {
  const { decoders } = options;
  const packer = decoders ? new BlockPacker() : undefined;
  const queue: Promise<DecodedBlock>[] = [];
  const submit = () => {
    if (!decoders || !packer || packer.count === 0) return;
    const decoded = decoders.decode(packer.take());
    decoded.catch(() => undefined); // awaited in order below; unawaited only when reading stopped early
    queue.push(decoded);
  };
  const batches = splitLineBatches(body, {
    maxLineBytes: options.maxRecordBytes,
    keepBytes: options.rejectRawMaxBytes,
  });
  for await (const batch of batches)
    for (const line of batch) {
      if (packer && line.terminated && !line.overLimit) {
        packer.add(line.raw ?? Buffer.from(line.text), line.lineNumber);
        if (packer.full) submit();
        while (queue.length > MAX_BLOCKS_IN_FLIGHT) yield { kind: 'block', block: await queue.shift()! };
        continue;
      }
      submit();
      while (queue.length > 0) yield { kind: 'block', block: await queue.shift()! };
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
      // Invalid UTF-8 is quarantined with its bytes; a last line cut mid-character is a cut body (below).
      const invalid = line.raw ? firstInvalidUtf8(line.raw) : -1;
      const cut = !line.terminated && checkedParse(line.text, undefined, indicator) === MALFORMED;
      if (invalid !== -1 && line.raw && !cut) {
        const { location: _l, ...reject } = invalidUtf8Reject(
          location,
          line.raw,
          invalid,
          options.rejectRawMaxBytes,
        );
        yield { kind: 'malformed', location, ...reject };
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
          raw: cut
            ? Buffer.from(line.text).subarray(0, options.rejectRawMaxBytes).toString('utf8')
            : line.text,
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
        seq: line.lineNumber,
      };
    }
  submit();
  while (queue.length > 0) yield { kind: 'block', block: await queue.shift()! };
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

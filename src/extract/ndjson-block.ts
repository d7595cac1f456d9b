import { canonicalJson, contentHash } from '../schema/report.js';
import { validateWireLine } from '../schema/wire-line.js';
import type { KnownLines } from '../sync/known-lines.js';
import { LineBuffer, type EncodedLines } from '../util/line-file.js';
import type { Reject } from '../warehouse/staging.js';
import { seenLine, stagedRowLine } from '../warehouse/staged-line.js';
import type { ExtraLimits } from '../schema/value-rules.js';
import { parseJsonLine } from './ndjson.js';
import { recordIdOf } from './record.js';
import { firstInvalidUtf8, invalidUtf8Reject } from './utf8.js';

/**
 * A run of whole NDJSON lines (each ended by `\n` in the body, none over the line-length limit), packed for a
 * decode worker: line `i` is `bytes[offsets[i] .. offsets[i+1])` without its `\n`, physical line number
 * `lineNumbers[i]`.
 */
export interface NdjsonBlock {
  bytes: Uint8Array;
  /** `count + 1` offsets into `bytes`. */
  offsets: Uint32Array;
  lineNumbers: Float64Array;
  count: number;
}

/**
 * A decoded block, ready for `StagingWriter.addBlock`: batch-file lines of valid reports (`rows`) and of
 * known lines (`seen`), the block's rejects, and its counts (records: blank lines are not records).
 */
export interface DecodedBlock {
  rows: EncodedLines;
  seen: EncodedLines;
  rejects: Reject[];
  read: number;
  loaded: number;
  rejected: number;
}

/**
 * Decodes a block exactly as the runner treats single records (run-sync.ts): blank lines skipped; a line whose
 * hash `known` holds → a known line; else checked to be UTF-8 (invalid bytes → reject holding them in base64,
 * extract/utf8.ts), parsed (stream-json's checked parse: malformed → reject), validated
 * (`validateWireReport` within `limits`: invalid → reject with the zod issues), and staged with its canonical JSON, content
 * hash and line hash. Staged records and known lines are numbered by their line (`seq`), which keeps arrival
 * order whichever thread decodes the block. Pure: runs in a worker thread or inline.
 *
 * @param rawMaxBytes raw text kept for a malformed line (bytes); longer text is cut and flagged
 */
export function decodeBlock(
  block: NdjsonBlock,
  known: KnownLines,
  rawMaxBytes: number,
  limits: ExtraLimits,
): DecodedBlock {
  const rows = new LineBuffer();
  const seen = new LineBuffer();
  const rejects: Reject[] = [];
  let read = 0;
  let loaded = 0;
  let rejected = 0;
  const { bytes, offsets, lineNumbers } = block;
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = 0; i < block.count; i++) {
    const raw = view.subarray(offsets[i], offsets[i + 1]);
    if (isBlank(raw)) continue;
    read++;
    const line = lineNumbers[i]!;
    const location = { line };
    const check = known.check(raw);
    if (check.known) {
      loaded++;
      seen.write(seenLine(line, check.hash));
      continue;
    }
    const invalid = firstInvalidUtf8(raw);
    if (invalid !== -1) {
      rejected++;
      rejects.push(invalidUtf8Reject(location, raw, invalid, rawMaxBytes));
      continue;
    }
    const text = raw.toString('utf8');
    const parsed = parseJsonLine(text);
    if ('error' in parsed) {
      rejected++;
      const cut = raw.length > rawMaxBytes;
      rejects.push({
        location,
        raw: cut ? raw.subarray(0, rawMaxBytes).toString('utf8') : text,
        ...(cut ? { rawTruncated: true, rawBytes: raw.length } : {}),
        issues: [{ path: '', message: `malformed JSON: ${parsed.error}` }],
      });
      continue;
    }
    const result = validateWireLine(text, parsed.value, limits);
    if (!result.ok) {
      rejected++;
      rejects.push({ location, raw: text, recordId: recordIdOf(parsed.value), issues: result.issues });
      continue;
    }
    loaded++;
    const json = canonicalJson(result.report);
    const hash = contentHash(result.report, json);
    rows.write(stagedRowLine(line, location, result.report, json, hash, check.hash));
  }
  return { rows: rows.take(), seen: seen.take(), rejects, read, loaded, rejected };
}

function isBlank(raw: Buffer): boolean {
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i];
    if (c !== 0x20 && c !== 0x09 && c !== 0x0d) return false;
  }
  return true;
}

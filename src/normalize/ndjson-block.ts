import type { NdjsonBlock, OverLongLine } from '../extract/block-packer.js';
import { parseJsonLine } from './json-line.js';
import { readableJsonId } from '../extract/readable-id.js';
import { firstInvalidUtf8, invalidUtf8Reject } from '../extract/utf8.js';
import { RECORD_ISSUE_CODES } from '../schema/record-issue.js';
import { canonicalJson, contentHash } from '../schema/wire-format.js';
import type { ExtraLimits } from '../schema/value-rules.js';
import { validateWireLine } from '../schema/wire-line.js';
import { SyncError } from '../util/errors.js';
import { LineBuffer } from '../util/line-file.js';
import type { KnownLines } from './known-lines.js';
import type { DecodedBlock, Reject } from './reject.js';
import { canonicalLine } from './canonical-line.js';
import { seenLine, stagedLineHead, stagedRowLine } from './staged-line.js';

export type { NdjsonBlock };

/**
 * Decodes a block of NDJSON lines: blank lines skipped; an over-long line → reject (its kept text, flagged
 * cut, with its full size); a line whose hash `known` holds → a known line (marked read in `known` when the
 * set tracks seen lines, else staged as a `seen` line); else checked to be UTF-8
 * (invalid bytes → reject holding them in base64, extract/utf8.ts), parsed (stream-json's checked parse:
 * malformed → reject), validated (`validateWireLine` within `limits`: invalid → reject with the zod
 * issues), and staged with its canonical JSON, content hash and line hash. Staged records and known lines
 * are numbered by their line (`seq`), which keeps arrival order whichever thread decodes the block. Rejects
 * come in line order. Pure but for `known`'s marks: runs in a worker thread or inline.
 *
 * A line already in canonical form is staged by the fast lane (canonical-line.ts) without being parsed
 * into objects; every other line takes the general path above, which decides all rejects.
 *
 * @param rawMaxBytes raw text kept for a malformed line (bytes); longer text is cut and flagged
 * @param fastLane false sends every line through the general path (the fast lane's tests compare both)
 * @throws SyncError `BODY_TRUNCATED` (retryable) when the block's `unterminated` last line does not parse:
 *   a close-delimited body was cut mid-line (docs/how-a-sync-works.md)
 */
export function decodeBlock(
  block: NdjsonBlock,
  known: KnownLines,
  rawMaxBytes: number,
  limits: ExtraLimits,
  fastLane = true,
): DecodedBlock {
  const out: BlockOut = { rows: new LineBuffer(), seen: new LineBuffer(), rejects: [], known: 0 };
  const rules: LineRules = { known, rawMaxBytes, limits, fastLane };
  let read = 0;
  let loaded = 0;
  const { bytes, offsets, lineNumbers, overLong } = block;
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let o = 0; // next over-long line: merged in by line number, so rejects stay in line order
  const overLongBefore = (line: number) => {
    for (; o < overLong.length && overLong[o]!.lineNumber < line; o++) {
      read++;
      out.rejects.push(overLongReject(overLong[o]!));
    }
  };
  for (let i = 0; i < block.count; i++) {
    const raw = view.subarray(offsets[i], offsets[i + 1]! - 1);
    const line = lineNumbers[i]!;
    overLongBefore(line);
    if (isBlank(raw)) continue;
    read++;
    if (block.unterminated && i === block.count - 1) checkComplete(raw, line, block.unterminated.url);
    if (decodeLine(raw, line, rules, out)) loaded++;
  }
  overLongBefore(Infinity);
  known.countKnown(out.known);
  // Every line read is either loaded (staged or known) or rejected.
  const { rows, seen, rejects } = out;
  return { rows: rows.take(), seen: seen.take(), rejects, read, loaded, rejected: read - loaded };
}

/** Where the lines of one block go: staged rows, known lines, rejects. */
interface BlockOut {
  rows: LineBuffer;
  seen: LineBuffer;
  rejects: Reject[];
  /** Known lines marked in a set that tracks them (not written to `seen`). */
  known: number;
}

/** What decoding a line goes by (the arguments of {@link decodeBlock}). */
interface LineRules {
  known: KnownLines;
  rawMaxBytes: number;
  limits: ExtraLimits;
  fastLane: boolean;
}

/**
 * Decodes one non-blank line into `out`: a known line, invalid UTF-8 (rejected), a line in canonical form
 * (the fast lane), else the general path. True when the line is loaded, false when it is rejected.
 */
function decodeLine(raw: Buffer, line: number, rules: LineRules, out: BlockOut): boolean {
  const location = { line };
  const check = rules.known.check(raw, line);
  if (check.known) {
    // A set that tracks seen lines has marked it; otherwise the merge learns of it from staging.
    if (rules.known.tracksSeen) out.known++;
    else out.seen.write(seenLine(line, check.hash));
    return true;
  }
  const invalid = firstInvalidUtf8(raw);
  if (invalid !== -1) {
    out.rejects.push(invalidUtf8Reject(location, raw, invalid, rules.rawMaxBytes, readableJsonId(raw)));
    return false;
  }
  const text = raw.toString('utf8');
  const canonical = rules.fastLane ? canonicalLine(text, raw, rules.limits) : undefined;
  if (canonical !== undefined) {
    const { hash, csvHash, extraJson } = canonical;
    out.rows.writeParts(stagedLineHead(line, location, hash, csvHash, check.hash, extraJson), raw, '}');
    return true;
  }
  return decodeParsed(raw, text, { line, lineHash: check.hash }, rules, out);
}

/**
 * The general path of a UTF-8 line: parsed (malformed → reject, its raw text cut at `rawMaxBytes`),
 * validated (invalid → reject with the zod issues), else staged with its canonical JSON and content hash.
 */
function decodeParsed(
  raw: Buffer,
  text: string,
  at: { line: number; lineHash: bigint },
  rules: LineRules,
  out: BlockOut,
): boolean {
  const location = { line: at.line };
  const parsed = parseJsonLine(text);
  if ('error' in parsed) {
    const cut = raw.length > rules.rawMaxBytes;
    out.rejects.push({
      location,
      raw: cut ? raw.subarray(0, rules.rawMaxBytes).toString('utf8') : text,
      ...(cut ? { rawTruncated: true, rawBytes: raw.length } : {}),
      recordId: readableJsonId(raw),
      issues: [
        { path: '', message: `malformed JSON: ${parsed.error}`, code: RECORD_ISSUE_CODES.malformedJson },
      ],
    });
    return false;
  }
  const result = validateWireLine(text, parsed.value, rules.limits);
  if (!result.ok) {
    // Read from the bytes, not the parsed value: `JSON.parse` keeps the last of an id given twice, as if
    // the line named that report for sure.
    out.rejects.push({ location, raw: text, recordId: readableJsonId(raw), issues: result.issues });
    return false;
  }
  const json = canonicalJson(result.report);
  const hash = contentHash(result.report, json);
  out.rows.write(stagedRowLine(at.line, location, result.report, json, hash, at.lineHash));
  return true;
}

/** Whether an NDJSON line holds only spaces, tabs and a CR (a blank line: no record, never quarantined). */
export function isBlank(raw: Uint8Array): boolean {
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i];
    if (c !== 0x20 && c !== 0x09 && c !== 0x0d) return false;
  }
  return true;
}

/**
 * A last line without a final `\n` is a record only when it parses: else the body was cut mid-line, and
 * the export is read again (a cut line is never quarantined as if the upstream had sent it).
 */
function checkComplete(raw: Buffer, line: number, url: string): void {
  if (!('error' in parseJsonLine(raw.toString('utf8')))) return;
  throw new SyncError(
    'BODY_TRUNCATED',
    `The body of ${url} ended in the middle of line ${line} (connection closed early)`,
    { context: { url, line }, retry: 'export' },
  );
}

function overLongReject(line: OverLongLine): Reject {
  return {
    location: { line: line.lineNumber },
    raw: line.text,
    rawTruncated: true,
    rawBytes: line.bytes,
    recordId: readableJsonId(Buffer.from(line.text)),
    issues: [
      {
        path: '',
        message: `line of ${line.bytes} bytes exceeds the ${line.limit}-byte limit`,
        code: RECORD_ISSUE_CODES.recordTooLarge,
      },
    ],
  };
}

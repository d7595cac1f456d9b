import { isUtf8 } from 'node:buffer';
import { RECORD_ISSUE_CODES } from '../schema/record-issue.js';
import type { RecordLocation, UnreadableRecord } from './record.js';

/**
 * Offset of the first byte of `bytes` that is not part of well-formed UTF-8 (RFC 3629: no overlong form, no
 * surrogate U+D800–U+DFFF, nothing above U+10FFFF, no truncated sequence), or -1 when all of it is. The
 * common case (valid) is one `isUtf8` call (simdutf); the scan for the offset runs only on invalid input.
 */
export function firstInvalidUtf8(bytes: Uint8Array, from = 0, to = bytes.length): number {
  if (isUtf8(from === 0 && to === bytes.length ? bytes : bytes.subarray(from, to))) return -1;
  let i = from;
  while (i < to) {
    const n = sequenceLength(bytes, i, to);
    if (n === 0) return i;
    i += n;
  }
  return -1;
}

/** Every offset where an invalid sequence starts in `bytes` (resynchronising a byte on), ascending. */
export function invalidUtf8Offsets(bytes: Uint8Array): number[] {
  if (isUtf8(bytes)) return [];
  const out: number[] = [];
  let i = 0;
  while (i < bytes.length) {
    const n = sequenceLength(bytes, i, bytes.length);
    if (n === 0) {
      out.push(i);
      i++;
    } else i += n;
  }
  return out;
}

// Length of the well-formed UTF-8 sequence at `i` (Unicode table 3-7), or 0.
function sequenceLength(b: Uint8Array, i: number, end: number): number {
  const c = b[i]!;
  if (c < 0x80) return 1;
  const cont = (k: number, lo = 0x80, hi = 0xbf) => i + k < end && b[i + k]! >= lo && b[i + k]! <= hi;
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c === 0xe0) return cont(1, 0xa0) && cont(2) ? 3 : 0;
  if ((c >= 0xe1 && c <= 0xec) || c === 0xee || c === 0xef) return cont(1) && cont(2) ? 3 : 0;
  if (c === 0xed) return cont(1, 0x80, 0x9f) && cont(2) ? 3 : 0;
  if (c === 0xf0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xf1 && c <= 0xf3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c === 0xf4) return cont(1, 0x80, 0x8f) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

/**
 * The quarantine entry of a record whose bytes are not valid UTF-8: its raw bytes (cut to `rawMaxBytes`)
 * stored base64-encoded (`rejected_records.raw_encoding = 'base64'`), never decoded with U+FFFD, and the
 * offset of the first invalid byte within the record.
 */
export function invalidUtf8Reject(
  location: RecordLocation,
  bytes: Uint8Array,
  offset: number,
  rawMaxBytes: number,
  recordId?: string,
): UnreadableRecord {
  const cut = bytes.length > rawMaxBytes;
  const kept = cut ? bytes.subarray(0, rawMaxBytes) : bytes;
  return {
    location,
    raw: Buffer.from(kept.buffer, kept.byteOffset, kept.byteLength).toString('base64'),
    rawEncoding: 'base64',
    ...(cut ? { rawTruncated: true } : {}),
    rawBytes: bytes.length,
    ...(recordId === undefined ? {} : { recordId }),
    issues: [
      {
        path: '',
        message:
          `invalid UTF-8 at byte ${offset} of the record (0x${(bytes[offset] ?? 0).toString(16).padStart(2, '0')}): ` +
          'quarantined with its raw bytes (base64), never decoded with U+FFFD',
        code: RECORD_ISSUE_CODES.invalidUtf8,
      },
    ],
  };
}

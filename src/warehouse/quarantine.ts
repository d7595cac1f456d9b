import type { DuckDBConnection } from '@duckdb/node-api';
import { formatLocation } from '../extract/record.js';
import type { Reject } from '../normalize/reject.js';
import { redactSecrets } from '../util/redact.js';

/** Where quarantine entries go: the run, its source, and the raw text kept per entry (bytes). */
export interface QuarantineTarget {
  runId: string;
  /** `ndjson` | `csv`, stored with each reject. */
  source: string;
  /** Raw text kept per reject (bytes); longer text is cut and flagged. */
  rawMaxBytes: number;
}

/**
 * Appends quarantine entries of `target.runId` to `rejected_records` (raw text cut to `target.rawMaxBytes`
 * on a character boundary; base64 raw kept as given). Call inside the caller's transaction.
 */
export async function appendRejects(
  connection: DuckDBConnection,
  target: QuarantineTarget,
  rejects: readonly Reject[],
): Promise<void> {
  if (rejects.length === 0) return;
  const appender = await connection.createAppender('rejected_records');
  const now = new Date().toISOString();
  const max = target.rawMaxBytes;
  try {
    for (const r of rejects) {
      const base64 = r.rawEncoding === 'base64';
      const fullBytes = r.rawBytes ?? Buffer.byteLength(r.raw);
      const cut = fullBytes > max || r.rawTruncated === true;
      // A secret echoed by the upstream never lands: the stored raw text differs from the source there
      // (redact.ts), `raw_bytes` keeps the source's size. Redacted before the cut, so no prefix survives.
      const redacted = base64 ? redactBase64(r.raw) : redactSecrets(r.raw);
      const raw = !base64 && Buffer.byteLength(redacted) > max ? cutUtf8(redacted, max) : redacted;
      appender.appendVarchar(target.runId);
      appender.appendVarchar(target.source);
      appender.appendVarchar(formatLocation(r.location));
      appender.appendBigInt(BigInt(r.location.line));
      if (r.location.page === undefined) appender.appendNull();
      else appender.appendInteger(r.location.page);
      if (r.location.row === undefined) appender.appendNull();
      else appender.appendBigInt(BigInt(r.location.row));
      if (r.recordId === undefined) appender.appendNull();
      else appender.appendVarchar(redactSecrets(r.recordId));
      appender.appendVarchar(raw);
      appender.appendBoolean(cut);
      appender.appendBigInt(BigInt(fullBytes));
      appender.appendVarchar(redactSecrets(JSON.stringify(r.issues)));
      appender.appendVarchar(now);
      appender.appendVarchar(base64 ? 'base64' : 'text');
      appender.endRow();
    }
    appender.flushSync();
  } finally {
    appender.closeSync();
  }
}

/** Cuts a string to at most `maxBytes` UTF-8 bytes without splitting a character. */
export function cutUtf8(text: string, maxBytes: number): string {
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= maxBytes) return text;
  let end = maxBytes;
  while (end > 0 && (buf[end]! & 0xc0) === 0x80) end--;
  return buf.subarray(0, end).toString('utf8');
}

/** {@link redactSecrets} over base64-carried raw bytes: secrets are ASCII, so latin1 maps bytes 1:1. */
function redactBase64(raw: string): string {
  const bytes = Buffer.from(raw, 'base64').toString('latin1');
  const redacted = redactSecrets(bytes);
  return redacted === bytes ? raw : Buffer.from(redacted, 'latin1').toString('base64');
}

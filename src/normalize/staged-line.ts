import { formatLocation, type RecordLocation } from '../extract/record.js';
import type { Report } from '../schema/wire-format.js';
import { extraObjectJson } from '../schema/json-text.js';
import { csvProjectionHash } from '../schema/csv-projection.js';

/**
 * The batch-file line of one staged report, as `StagingWriter` loads it with `read_json`: `s` seq, `l`
 * location, `h` content hash, `ph` the content hash of its CSV projection (schema/csv-projection.ts) or null
 * when it is `h`, `lh` raw-line hash (text, a signed 64-bit integer) or null, `x` the `extra` fields as JSON
 * text or null, `r` the canonical JSON (`canonicalJson` of schema/wire-format.ts) embedded as it is — DuckDB
 * reads the known fields from it and matches keys case-sensitively, so an extra field never shadows one.
 * Pure (no DuckDB): the decode workers build these lines too.
 */
export function stagedRowLine(
  seq: number,
  location: RecordLocation,
  r: Report,
  json: string,
  hash: string,
  lineHash: bigint | undefined,
): string {
  const x = r.extra === null ? null : extraObjectJson(r.extra);
  return `${stagedLineHead(seq, location, hash, csvProjectionHash(r, hash), lineHash, x)}${json}}`;
}

/**
 * The start of a batch-file line ({@link stagedRowLine}) up to its canonical JSON, which follows it, then
 * `}`: `extraJson` is the unknown fields as one JSON object's text (or null). The fast lane
 * (canonical-line.ts) builds a line from this and the received bytes, without a {@link Report}.
 */
export function stagedLineHead(
  seq: number,
  location: RecordLocation,
  hash: string,
  csvHash: string,
  lineHash: bigint | undefined,
  extraJson: string | null,
): string {
  const x = extraJson === null ? 'null' : JSON.stringify(extraJson);
  // Most reports are their own CSV projection: null keeps a second copy of the hash out of staging.
  const ph = csvHash === hash ? 'null' : `"${csvHash}"`;
  const lh = lineHash === undefined ? 'null' : `"${lineHash.toString()}"`;
  // Valid UTF-8 JSON: the validator quarantines lone surrogates (no `\udXXX` escape reaches here), and a
  // value DuckDB still refuses is bisected out of the batch by StagingWriter.
  // A location is words, numbers, commas and spaces: nothing to escape.
  return `{"s":${seq},"l":"${formatLocation(location)}","h":"${hash}","ph":${ph},"lh":${lh},"x":${x},"r":`;
}

/** The batch-file line of a known (unchanged) line: its seq and raw-line hash. */
export function seenLine(seq: number, lineHash: bigint): string {
  return `{"s":${seq},"lh":"${lineHash.toString()}"}`;
}

import type { RecordLocation } from '../extract/record.js';
import { formatLocation } from '../extract/record.js';
import type { Report } from '../schema/report.js';
import { extraObjectJson } from '../schema/json-text.js';
import { csvProjectionHash } from '../schema/csv-projection.js';

/**
 * The batch-file line of one staged report, as `StagingWriter` loads it with `read_json`: `s` seq, `l`
 * location, `h` content hash, `ph` the content hash of its CSV projection (schema/csv-projection.ts), `lh` raw-line hash (text, a signed 64-bit integer) or null, `x` the `extra`
 * fields as JSON text or null, `r` the canonical JSON (`canonicalJson` of schema/report.ts) embedded as it is
 * — DuckDB reads the known fields from it and matches keys case-sensitively, so an extra field never
 * shadows one. Pure (no DuckDB): the decode workers build these lines too.
 */
export function stagedRowLine(
  seq: number,
  location: RecordLocation,
  r: Report,
  json: string,
  hash: string,
  lineHash: bigint | undefined,
): string {
  const x = r.extra === null ? 'null' : JSON.stringify(extraObjectJson(r.extra));
  const lh = lineHash === undefined ? 'null' : `"${lineHash.toString()}"`;
  const ph = csvProjectionHash(r, hash);
  const line = `{"s":${seq},"l":${JSON.stringify(formatLocation(location))},"h":"${hash}","ph":"${ph}","lh":${lh},"x":${x},"r":${json}}`;
  return hasSurrogateEscape(line) ? wellFormedLine(line) : line;
}

/** The batch-file line of a known (unchanged) line: its seq and raw-line hash. */
export function seenLine(seq: number, lineHash: bigint): string {
  return `{"s":${seq},"lh":"${lineHash.toString()}"}`;
}

// JSON.stringify writes a lone UTF-16 surrogate as a `\udXXX` escape, which DuckDB's JSON reader refuses
// ("no low surrogate"). Such text is replaced by U+FFFD, as the Appender's UTF-8 conversion did.
function hasSurrogateEscape(line: string): boolean {
  return line.includes('\\ud');
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

function wellFormedLine(line: string): string {
  const row = wellFormed(JSON.parse(line)) as { x: string | null; r: unknown };
  if (row.x !== null) row.x = JSON.stringify(wellFormed(JSON.parse(row.x)));
  return JSON.stringify(row);
}

function wellFormed(value: unknown): unknown {
  if (typeof value === 'string') return value.replace(LONE_SURROGATE, '\ufffd');
  if (Array.isArray(value)) return value.map(wellFormed);
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[wellFormed(k) as string] = wellFormed(v);
  return out;
}

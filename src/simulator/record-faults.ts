import type { Report } from '../schema/wire-format.js';
import type { DatasetEntry } from './dataset-snapshot.js';
import { GIANT_DEFAULT_BYTES, type FaultOf } from './faults.js';

/**
 * One record of an export body after the record-level faults: a report (current, or an older/tied
 * duplicate version), a wart (its raw line), or an injected malformed line (NDJSON only).
 */
export type BodyRecord =
  { kind: 'report'; report: Report } | { kind: 'wart'; raw: string } | { kind: 'garbage'; text: string };

/** The record-level faults applied to one response body. */
export interface RecordFaults {
  malformed: ReadonlyArray<FaultOf<'malformed'>>;
  giant: ReadonlyArray<FaultOf<'giant'>>;
  duplicates?: FaultOf<'duplicates'> | undefined;
}

/** True when any record-level fault is active (the plain path skips the per-record checks). */
export function hasRecordFaults(faults: RecordFaults): boolean {
  return faults.malformed.length > 0 || faults.giant.length > 0 || faults.duplicates !== undefined;
}

/**
 * Turns export entries into body records and applies the record-level faults. Positions are 0-based
 * indices of the entries in this body (for a CSV page: within the page).
 *
 * - `malformed`: a line that is not JSON is inserted after every `every` records (default 10) and before
 *   each position in `at`. Four styles rotate: a truncated object, plain text, two objects on one line,
 *   an object with unquoted keys.
 * - `giant`: the report at each position of `at` (default 1; the next report when that is a wart) gets
 *   a `description` of `bytes` ASCII bytes (default 5 MiB).
 * - `duplicates`: the reports at the selected positions (every 5th by default) are emitted with a second
 *   version, rotating three patterns: (1) current first, then an older version (`updatedAt` one hour earlier,
 *   status one step back); (2) the older version first, then the current one; (3) a tie: a version with the
 *   same `updatedAt` and a description ending in " (superseded)" first, then the current one. The rule
 *   "latest `updatedAt` wins, then the last seen" (docs/how-a-sync-works.md) always yields the current version.
 */
export function* withRecordFaults(
  entries: Iterable<DatasetEntry>,
  faults: RecordFaults,
): Generator<BodyRecord> {
  const dup = faults.duplicates;
  const dupAt = new Set(dup?.at ?? []);
  const dupEvery = dup ? (dup.every ?? (dup.at ? undefined : 5)) : undefined;
  const malformedAt = new Set(faults.malformed.flatMap((f) => f.at ?? []));
  const malformedEvery = faults.malformed
    .map((f) => f.every ?? (f.at ? undefined : 10))
    .filter((n): n is number => n !== undefined);
  const giants = faults.giant.flatMap((f) =>
    (f.at ?? [1]).map((at) => ({ at, bytes: f.bytes ?? GIANT_DEFAULT_BYTES, done: false })),
  );
  let position = 0;
  let injected = 0;
  let duplicated = 0;
  for (const entry of entries) {
    if (malformedAt.has(position)) yield { kind: 'garbage', text: garbageLine(injected++) };
    if (entry.kind === 'wart') {
      yield { kind: 'wart', raw: entry.raw };
    } else {
      let report = entry.report;
      for (const g of giants) {
        if (!g.done && position >= g.at) {
          g.done = true;
          report = { ...report, description: filler(g.bytes) };
        }
      }
      const isDup =
        dup !== undefined &&
        (dupAt.has(position) || (dupEvery !== undefined && (position + 1) % dupEvery === 0));
      if (isDup) yield* duplicatePair(report, duplicated++);
      else yield { kind: 'report', report };
    }
    position++;
    for (const every of malformedEvery) {
      if (position % every === 0) yield { kind: 'garbage', text: garbageLine(injected++) };
    }
  }
}

function duplicatePair(current: Report, n: number): BodyRecord[] {
  const pattern = n % 3;
  if (pattern === 2) {
    const tie: Report = { ...current, description: `${current.description ?? ''} (superseded)`.trimStart() };
    return [
      { kind: 'report', report: tie },
      { kind: 'report', report: current },
    ];
  }
  const older: Report = {
    ...current,
    status: previousStatus(current.status),
    updatedAt: new Date(Date.parse(current.updatedAt) - 3_600_000).toISOString(),
  };
  return pattern === 0
    ? [
        { kind: 'report', report: current },
        { kind: 'report', report: older },
      ]
    : [
        { kind: 'report', report: older },
        { kind: 'report', report: current },
      ];
}

function previousStatus(status: string): string {
  if (status === 'IN_PROGRESS') return 'SUBMITTED';
  if (status === 'RESOLVED' || status === 'REJECTED') return 'IN_PROGRESS';
  return status;
}

const GARBAGE = [
  (n: number) => `{"id":"broken-${n}","status":"SUBMITTED","description":"cut off in the mid`,
  (n: number) => `this line is not JSON at all (${n})`,
  (n: number) => `{"id":"two-${n}a"}{"id":"two-${n}b"}`,
  (n: number) => `{id: "unquoted-${n}", status: SUBMITTED}`,
];

/** The n-th injected malformed line (never parseable by `JSON.parse`). */
export function garbageLine(n: number): string {
  return (GARBAGE[n % GARBAGE.length] as (n: number) => string)(n);
}

const FILLER_UNIT = 'Very long description that never ends. ';

/** ASCII text of exactly `bytes` bytes. */
function filler(bytes: number): string {
  return FILLER_UNIT.repeat(Math.ceil(bytes / FILLER_UNIT.length)).slice(0, bytes);
}

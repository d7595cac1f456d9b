import type { Report } from './wire-format.js';

/**
 * The body of `GET /reports/stats`: counters over the published, valid reports. The upstream names no field
 * (docs/upstream-contract.md: "Fields of the aggregate counters: not shown"); this is our reading (docs/sources.md: `total`, `byStatus`,
 * `byDestination`). Keys of both maps are sorted, so equal data gives byte-equal JSON.
 */
export interface ReportStats {
  total: number;
  byStatus: Record<string, number>;
  byDestination: Record<string, number>;
}

/**
 * Counts reports by status and by destination. Pure: the simulator and the reader compute the same shape
 * from the same reports. Accepts any iterable (a generated dataset streams millions of small objects
 * through it without holding them).
 */
export function computeStats(reports: Iterable<Pick<Report, 'status' | 'destination'>>): ReportStats {
  const byStatus = new Map<string, number>();
  const byDestination = new Map<string, number>();
  let total = 0;
  for (const r of reports) {
    total++;
    byStatus.set(r.status, (byStatus.get(r.status) ?? 0) + 1);
    byDestination.set(r.destination, (byDestination.get(r.destination) ?? 0) + 1);
  }
  return { total, byStatus: sortedCounts(byStatus), byDestination: sortedCounts(byDestination) };
}

/** A number of reports of one status and one destination, as a `GROUP BY status, destination` gives them. */
export interface StatusDestinationCount {
  status: string;
  destination: string;
  /** Reports in the group (a non-negative integer). */
  n: number;
}

/**
 * {@link computeStats} of reports given by group: the same body as counting `n` reports of each group one by
 * one (what the readers' `GROUP BY` gives, read in time independent of the number of reports).
 */
export function statsOfGroups(groups: Iterable<StatusDestinationCount>): ReportStats {
  const byStatus = new Map<string, number>();
  const byDestination = new Map<string, number>();
  let total = 0;
  for (const { status, destination, n } of groups) {
    if (n === 0) continue; // counting no report makes no key
    total += n;
    byStatus.set(status, (byStatus.get(status) ?? 0) + n);
    byDestination.set(destination, (byDestination.get(destination) ?? 0) + n);
  }
  return { total, byStatus: sortedCounts(byStatus), byDestination: sortedCounts(byDestination) };
}

/**
 * Counts by key as an object, keys in code-unit order (not locale order: the same on every machine). Every
 * key is a plain key: a status named `__proto__` is counted like any other (`Object.fromEntries` defines
 * its keys; an assignment would set the prototype and drop the count).
 */
export function sortedCounts(counts: ReadonlyMap<string, number>): Record<string, number> {
  const keys = [...counts.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(keys.map((key) => [key, counts.get(key) ?? 0]));
}

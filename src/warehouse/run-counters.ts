/**
 * The figures of one run, kept in memory while it goes and written to `sync_runs` at every checkpoint
 * and at the end. Counts are records; `bytesRead` is bytes of response bodies as decoded (what the
 * extractor read), `bytesWire` the same bodies as they came over the wire (smaller when compressed).
 * Invariant checked at the end of every run: `recordsRead = recordsLoaded + recordsRejected`.
 */
export interface RunCounters {
  recordsRead: number;
  recordsLoaded: number;
  recordsRejected: number;
  duplicates: number;
  inserted: number;
  updated: number;
  unchanged: number;
  /** Reports rewritten in place from a lossy CSV form to typed values, with no new version (merge-refine.ts). */
  refined: number;
  removed: number;
  revived: number;
  /** Data-quality flags on the versions the run wrote (loaded, but impossible: warehouse/quality-flags.ts). */
  qualityFlags: number;
  bytesRead: number;
  bytesWire: number;
  pages: number;
}

/**
 * The counters a run's merge sets (merge.ts, quality-flags.ts, tombstones.ts): written to the run log in
 * the merge's transaction, and folded into the run's counters only once that transaction committed, so a
 * merge that rolls back leaves none of them on the failed run.
 */
export type MergeFigures = Pick<
  RunCounters,
  'duplicates' | 'inserted' | 'updated' | 'unchanged' | 'refined' | 'revived' | 'removed' | 'qualityFlags'
>;

/**
 * True when a run inserted, updated, revived, refined or removed a report: `sync_runs.outcome` is `changed`, and the
 * daemon publishes after it (a no-change run leaves the published copy and the reader's validators alone).
 */
export function changedAny(c: MergeFigures): boolean {
  return c.inserted + c.updated + c.revived + c.refined + c.removed > 0;
}

/** Fresh all-zero counters. */
export function emptyCounters(): RunCounters {
  return {
    recordsRead: 0,
    recordsLoaded: 0,
    recordsRejected: 0,
    duplicates: 0,
    inserted: 0,
    updated: 0,
    unchanged: 0,
    refined: 0,
    removed: 0,
    revived: 0,
    qualityFlags: 0,
    bytesRead: 0,
    bytesWire: 0,
    pages: 0,
  };
}

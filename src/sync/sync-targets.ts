/**
 * What `reports-sync sync --source` accepts:
 * - `default`: the NDJSON export, then the `/stats` snapshot (taken in the export run's finishing transaction);
 * - `ndjson`, `csv`: that export (each also snapshots `/stats` and infers tombstones when it is safe);
 * - `stats`: only a `/stats` snapshot run;
 * - `all`: NDJSON, then CSV, each with its snapshot;
 * - `recent`: the newest reports of the list endpoint, up to where the warehouse is current (no snapshot,
 *   no tombstones: see sources/recent-source.ts).
 * (Its own module so the CLI can list the choices without loading the pipeline.)
 */
export const SYNC_TARGETS = ['default', 'ndjson', 'csv', 'stats', 'all', 'recent'] as const;
export type SyncTarget = (typeof SYNC_TARGETS)[number];

import type { DuckDBConnection } from '@duckdb/node-api';
import type { Logger } from '../util/logger.js';

/** A source of the current time (injectable so tests can run a clock that goes backwards). */
export type Clock = () => Date;

/** The system clock. */
export const systemClock: Clock = () => new Date();

/**
 * The time a run's merge stamps on its versions (`valid_from`, `valid_to`, `removed_at`) and on what it saw
 * (`last_seen_at`, `sync_runs.seen_all_at`): the clock's `now`, unless a run already recorded a time at or
 * after it (the clock went back: NTP step, a VM restored, a host with a wrong time). Then it is the
 * latest of them plus 1 ms (the resolution of a JS `Date`, which stamps every version), and
 * a warning names both times. So versions never run backwards: every closed version has
 * `valid_to > valid_from`, and a report's versions are ordered as they were written; and the latest run
 * that saw every report (the one the `reports` view lifts `last_seen_at` to, migration 020) is the last one.
 * Call inside the finishing transaction (the writer lock makes the latest version stable).
 */
export async function mergeTime(connection: DuckDBConnection, now: Date, logger: Logger): Promise<Date> {
  // Every time a merge stamps is its run's merge time, recorded as `merged_at` (runs.ts, `RunLog.succeed`):
  // the run log alone bounds them, without a scan of the reports (~0.2 s and two columns cached at 10M).
  const reader = await connection.runAndReadAll(
    `SELECT epoch_ms(max(merged_at))::DOUBLE AS latest FROM sync_runs`,
  );
  const latest = reader.getRowObjectsJS()[0]?.latest as number | null | undefined;
  if (latest === null || latest === undefined || now.getTime() > latest) return now;
  const clamped = new Date(latest + 1);
  logger.warn(
    { clock: now.toISOString(), latestVersion: new Date(latest).toISOString(), used: clamped.toISOString() },
    'the clock is behind the latest recorded version or run: the merge is stamped just after it instead',
  );
  return clamped;
}

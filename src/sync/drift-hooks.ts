import type { DuckDBConnection } from '@duckdb/node-api';
import type { Config } from '../config/config.js';
import { SyncError } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import {
  detectDrift,
  insertEvents,
  recordDrift,
  type DriftDetection,
  type DriftEvent,
} from '../warehouse/drift.js';
import type { RunSyncOptions } from './run-sync.js';
import type { AfterMergeResult } from './run-types.js';

/** Runner hooks of {@link driftHooks}, and the events of the last run they saw. */
export interface DriftHooks extends Required<Pick<RunSyncOptions, 'beforeMerge' | 'afterMerge'>> {
  /** Drift events of the run (empty before it reached its merge, or when there was none). */
  events(): readonly DriftEvent[];
}

/**
 * Drift detection and the schema contract of a report source (warehouse/drift.ts), as runner hooks on the
 * run's own connection:
 * - `beforeMerge`: compares the staged records with the catalog. With `REPORTS_SCHEMA_CONTRACT=freeze`
 *   (dlt's term) a new value, field or type fails the run here, before anything is merged: the events are
 *   kept in `drift_events` (nothing enters the catalog, so the next run fails the same way until a person
 *   switches to `evolve` for one run);
 * - `afterMerge` (in the merge transaction): records the events and the new catalog entries, finds fields
 *   that are gone, and logs each event at warn.
 *
 * @throws SyncError `SCHEMA_FROZEN` (exit 1) from `beforeMerge` under `freeze`
 */
export function driftHooks(options: {
  connection: DuckDBConnection;
  config: Config;
  logger: Logger;
  source: string;
}): DriftHooks {
  let detection: DriftDetection | undefined;
  let events: DriftEvent[] = [];
  return {
    events: () => events,
    beforeMerge: async (ctx) => {
      events = [];
      detection = await detectDrift(options.connection, { runId: ctx.runId, source: options.source });
      if (options.config.schemaContract !== 'freeze' || detection.events.length === 0) return;
      events = detection.events;
      const run = { runId: ctx.runId, source: options.source, now: new Date() };
      await insertEvents(options.connection, run, events);
      logEvents(options.logger, run.runId, events);
      throw new SyncError(
        'SCHEMA_FROZEN',
        `The upstream schema drifted and REPORTS_SCHEMA_CONTRACT=freeze: ${events.map(describe).join('; ')}. ` +
          'Nothing was merged. Check the change, then run once with REPORTS_SCHEMA_CONTRACT=evolve to accept it',
        { context: { events } },
      );
    },
    afterMerge: async (ctx) => {
      if (!detection) return;
      events = await recordDrift(
        ctx.connection,
        { runId: ctx.runId, source: options.source, now: ctx.now },
        detection,
      );
      logEvents(options.logger, ctx.runId, events);
    },
  };
}

/** Chains runner hooks: each `beforeMerge`/`afterMerge` in the order given. */
export function chainHooks(
  ...hooks: Pick<RunSyncOptions, 'beforeMerge' | 'afterMerge'>[]
): Required<Pick<RunSyncOptions, 'beforeMerge' | 'afterMerge'>> {
  return {
    beforeMerge: async (ctx) => {
      for (const h of hooks) await h.beforeMerge?.(ctx);
    },
    afterMerge: async (ctx) => {
      const result: AfterMergeResult = {};
      for (const h of hooks) {
        const added = await h.afterMerge?.(ctx);
        if (added?.removed !== undefined) result.removed = added.removed;
        if (added?.facts) result.facts = { ...result.facts, ...added.facts };
      }
      return result;
    },
  };
}

/** One event as a person reads it: `new status value "ON_HOLD" (3 records)`. */
export function describe(e: DriftEvent): string {
  switch (e.kind) {
    case 'new_value':
      return `new ${e.field} value ${JSON.stringify(e.value)} (${e.count} records)`;
    case 'new_field':
      return `new field ${JSON.stringify(e.field)} of type ${e.value} (${e.count} records)`;
    case 'type_changed':
      return `field ${JSON.stringify(e.field)} now has type ${e.value} (${e.count} records)`;
    case 'field_gone':
      return `field ${JSON.stringify(e.field)} is gone from every current report`;
  }
}

function logEvents(logger: Logger, runId: string, events: readonly DriftEvent[]): void {
  for (const e of events) logger.warn({ runId, drift: e }, `schema drift: ${describe(e)}`);
}

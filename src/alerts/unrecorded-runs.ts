import { SyncError, errorMessage } from '../util/errors.js';
import { redactSecrets } from '../util/redact.js';
import type { AlertEvent } from './alert-event.js';
import { newEventId } from './alert-store.js';

/**
 * Jobs whose last run failed in a way the warehouse could not record (a full disk, a read-only file): the
 * run log holds no failure, so the rules of run-rules.ts see none and nothing could be recorded in
 * `alert_events` either. Such a failure is told from memory instead, once per job, and its end once, when
 * the job's outcome can be read from the warehouse again. Nothing of it survives the process: the next
 * start closes the run left `running` as `RUN_INTERRUPTED` and the rules tell that.
 */
export class UnrecordedRuns {
  readonly #open = new Set<string>();

  /**
   * The `run.failed` event of a job run that ended in `err` without a run log row, or `undefined` when
   * the job has one open already.
   */
  failed(job: string, err: unknown, at: Date): AlertEvent | undefined {
    if (this.#open.has(job)) return undefined;
    this.#open.add(job);
    const code = err instanceof SyncError ? err.code : 'RUN_FAILED';
    const message = redactSecrets(errorMessage(err));
    return {
      type: 'run.failed',
      incident: `run:${job}`,
      job,
      runId: null,
      summary: `${job} failed, and the warehouse could not record it: ${code}: ${message}`,
      figures: { code, message, recorded: false },
      eventId: newEventId(at),
      state: 'open',
      at,
    };
  }

  /**
   * Once the warehouse could be read and written again after `job`'s runs: the job's told failure ends.
   * `lastRunFailed`: whether its last run that ended failed, as the warehouse now records it (then the
   * rules have opened that incident themselves). Returns the `run.recovered` event to tell, if any.
   */
  settled(job: string, lastRunFailed: boolean | undefined, at: Date): AlertEvent | undefined {
    if (!this.#open.delete(job) || lastRunFailed !== false) return undefined;
    return {
      type: 'run.recovered',
      incident: `run:${job}`,
      job,
      runId: null,
      summary: `${job} succeeded again after a failure the warehouse could not record`,
      figures: { recorded: false },
      eventId: newEventId(at),
      state: 'resolved',
      at,
    };
  }

  /** The jobs with a failure told from memory that has not ended. */
  get jobs(): ReadonlySet<string> {
    return this.#open;
  }
}

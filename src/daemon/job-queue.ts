import type { Job } from './load-jobs.js';

/** Why a job run was asked for. */
export type RunReason = 'schedule' | 'catch-up' | 'manual';

/** The job the queue is running now. */
export interface RunningJob {
  job: Job;
  reason: RunReason;
  /** When it started (not when it was queued). */
  startedAt: Date;
}

/** Runs one job to its end; aborting `signal` asks it to stop early (a sync records `aborted`). */
export type RunJob = (job: Job, reason: RunReason, signal: AbortSignal) => Promise<void>;

interface Entry {
  job: Job;
  reason: RunReason;
  done: Promise<void>;
  settle: () => void;
}

/**
 * A single queue in front of the warehouse: jobs run one at a time, in the order asked (DuckDB has one
 * writer, docs/how-a-sync-works.md). Asking for a job that is already queued or running returns that run's
 * promise instead of queueing it twice, so a slow job never piles up behind itself.
 *
 * The promise of {@link enqueue} always resolves (a failing job is `runJob`'s to log); it resolves
 * without running when the queue is closed.
 */
export class JobQueue {
  readonly #runJob: RunJob;
  readonly #pending: Entry[] = [];
  #running: (Entry & { startedAt: Date; controller: AbortController }) | undefined;
  #closed = false;
  #draining: Promise<void> | undefined;

  constructor(runJob: RunJob) {
    this.#runJob = runJob;
  }

  /** The running job, if any. */
  get running(): RunningJob | undefined {
    const r = this.#running;
    return r && { job: r.job, reason: r.reason, startedAt: r.startedAt };
  }

  /** Names of the jobs waiting behind the running one. */
  get pending(): string[] {
    return this.#pending.map((e) => e.job.name);
  }

  /** Queues a run of `job` (or joins the queued or running one); resolves when that run is over. */
  enqueue(job: Job, reason: RunReason): Promise<void> {
    if (this.#closed) return Promise.resolve();
    const same =
      this.#running?.job.name === job.name
        ? this.#running
        : this.#pending.find((e) => e.job.name === job.name);
    if (same) return same.done;
    let settle!: () => void;
    const done = new Promise<void>((resolve) => (settle = resolve));
    this.#pending.push({ job, reason, done, settle });
    this.#draining ??= this.#drain();
    return done;
  }

  /**
   * Stops taking work: queued runs are dropped (their promises resolve), later `enqueue` calls do nothing.
   * The running job goes on; see {@link idle} and {@link abortRunning}.
   */
  close(): void {
    this.#closed = true;
    for (const entry of this.#pending.splice(0)) entry.settle();
  }

  /** Aborts the running job's signal (it is recorded as `aborted`, docs/deployment.md). */
  abortRunning(): void {
    this.#running?.controller.abort();
  }

  /** Resolves when no job is running (immediately when idle). */
  async idle(): Promise<void> {
    while (this.#draining) await this.#draining;
  }

  async #drain(): Promise<void> {
    try {
      for (let entry = this.#pending.shift(); entry; entry = this.#pending.shift()) {
        const controller = new AbortController();
        this.#running = { ...entry, startedAt: new Date(), controller };
        try {
          await this.#runJob(entry.job, entry.reason, controller.signal);
        } catch {
          // runJob logs its own failures; the queue only keeps going.
        } finally {
          this.#running = undefined;
          entry.settle();
        }
      }
    } finally {
      this.#draining = undefined;
    }
  }
}

/** What {@link PublishPolicy.afterJob} decides. */
export type PublishDecision =
  /** Publish now. */
  | 'publish'
  /** Nothing changed since the last publish: the published copy is current. */
  | 'unchanged'
  /** Changes wait: the last publish is younger than `REPORTS_PUBLISH_MIN_INTERVAL_MS`. */
  | 'deferred';

/**
 * When the daemon republishes its snapshot (warehouse/publish.ts applies the change set since the last
 * publish: after a `recent` run seconds; after a nightly full export the copy's changed reports, but every
 * Parquet file of `reports` again, measured in docs/performance.md). Never after a job that changed nothing (a 304, a `recent` run that caught up at
 * once) unless earlier changes still wait; at most once per `minIntervalMs`, so the job queue is not held
 * by a publish after every job. Changes deferred by the interval are published after
 * the first job that ends once it has passed (the reader of the daemon serves the live warehouse meanwhile).
 * Without a published copy the first succeeded job publishes, changed or not.
 * Not thread-safe by design: the job queue calls it between jobs, one at a time.
 */
export class PublishPolicy {
  #pending = false;
  #lastAt: number | undefined;

  /**
   * @param minIntervalMs `REPORTS_PUBLISH_MIN_INTERVAL_MS` (ms; 0: after every job that changed something)
   * @param lastPublishedAt when the current published copy was written (its file's mtime), if there is one
   * @param now the clock (ms since the epoch)
   */
  constructor(
    private readonly minIntervalMs: number,
    lastPublishedAt: Date | undefined,
    private readonly now: () => number = Date.now,
  ) {
    this.#lastAt = lastPublishedAt?.getTime();
    // No copy yet: the warehouse has never been published, whatever the first job changes.
    this.#pending = lastPublishedAt === undefined;
  }

  /** Whether changes wait for a publish. */
  get pending(): boolean {
    return this.#pending;
  }

  /** Called after each succeeded job: `changed` when it changed the warehouse's data. */
  afterJob(changed: boolean): PublishDecision {
    this.#pending ||= changed;
    if (!this.#pending) return 'unchanged';
    if (this.#lastAt !== undefined && this.now() - this.#lastAt < this.minIntervalMs) return 'deferred';
    return 'publish';
  }

  /** Called once a publish succeeded. */
  published(): void {
    this.#pending = false;
    this.#lastAt = this.now();
  }
}

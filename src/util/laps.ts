// A stopwatch for the steps of a long operation (the publish reports them for the bench).

/** Durations (ms) of a publish's named steps, each from the end of the one before. */
export class Laps {
  readonly ms: Record<string, number> = {};
  #last = Date.now();

  /** Ends the current step as `name` (durations of steps of the same name add up). */
  lap(name: string): void {
    const now = Date.now();
    this.ms[name] = (this.ms[name] ?? 0) + now - this.#last;
    this.#last = now;
  }
}

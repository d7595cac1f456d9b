import type { IncomingMessage } from 'node:http';

/**
 * One request the simulator received. Headers are kept verbatim (lower-case names, as Node gives them):
 * tests read them to check, e.g., that `x-api-key` never reaches another origin. The simulator never logs
 * them through pino.
 */
export interface RequestLogEntry {
  /** 1-based arrival number since the simulator started (keeps counting when old entries drop out). */
  seq: number;
  /** Wall-clock arrival time, ISO 8601. */
  at: string;
  method: string;
  /** Path and query exactly as requested. */
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** Status sent, once the response is finished or the connection closed (absent while in flight). */
  status?: number;
}

/** Largest number of entries kept; older ones drop out first. */
export const REQUEST_LOG_LIMIT = 10_000;

/** The bounded log of requests (the last {@link REQUEST_LOG_LIMIT}), oldest first. */
export class RequestLog {
  #entries: RequestLogEntry[] = [];
  #seq = 0;

  /** Records an arriving request and returns its entry (the caller fills in `status`). */
  add(req: IncomingMessage): RequestLogEntry {
    const entry: RequestLogEntry = {
      seq: ++this.#seq,
      at: new Date().toISOString(),
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      headers: { ...req.headers },
    };
    this.#entries.push(entry);
    // Trim in batches so a long run does not shift the array on every request.
    if (this.#entries.length > REQUEST_LOG_LIMIT + 1000)
      this.#entries = this.#entries.slice(-REQUEST_LOG_LIMIT);
    return entry;
  }

  /** Copies of the kept entries, oldest first (at most {@link REQUEST_LOG_LIMIT}). */
  list(): RequestLogEntry[] {
    return this.#entries.slice(-REQUEST_LOG_LIMIT).map((e) => ({ ...e, headers: { ...e.headers } }));
  }

  /** Forgets every entry (the sequence keeps counting). */
  clear(): void {
    this.#entries = [];
  }
}

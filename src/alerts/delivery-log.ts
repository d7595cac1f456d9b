import type { DuckDBConnection } from '@duckdb/node-api';
import type { Warehouse } from '../warehouse/database.js';
import type { Endpoint } from './webhook-payload.js';

/** Where one delivery stands after an attempt. */
export interface AttemptRecord {
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  statusCode: number | null;
  error: string | null;
}

/** A delivery left `pending` (by a process that stopped before it was done). */
export interface PendingDelivery {
  eventId: string;
  endpointKey: string;
  /** Attempts made so far. */
  attempts: number;
}

/**
 * The `alert_deliveries` table: one row per (event, endpoint), updated after every attempt. Writes go
 * through one connection, one at a time (the queue posts two deliveries at once).
 */
export class DeliveryLog {
  readonly #warehouse: Warehouse;
  #connection: Promise<DuckDBConnection> | undefined;
  #chain: Promise<unknown> = Promise.resolve();

  constructor(warehouse: Warehouse) {
    this.#warehouse = warehouse;
  }

  /** Records a delivery as `pending`, no attempt yet. */
  pending(eventId: string, endpoint: Endpoint): Promise<void> {
    return this.#write(
      `INSERT INTO alert_deliveries VALUES ($event, $endpoint, $key, 'pending', 0, NULL, NULL, now())`,
      { event: eventId, endpoint: endpoint.label, key: endpoint.key },
    );
  }

  /** Records an attempt's outcome. */
  attempt(eventId: string, endpoint: Endpoint, r: AttemptRecord): Promise<void> {
    return this.#write(
      `UPDATE alert_deliveries SET status = $status, attempts = $attempts, status_code = $code,
         last_error = $error, updated_at = now()
       WHERE event_id = $event AND endpoint_key = $key`,
      {
        event: eventId,
        key: endpoint.key,
        status: r.status,
        attempts: r.attempts,
        code: r.statusCode,
        error: r.error,
      },
    );
  }

  /** Deliveries still `pending` that were recorded within `maxAgeMs`, oldest first. */
  async pendingSince(maxAgeMs: number): Promise<PendingDelivery[]> {
    return this.#run(async (c) =>
      (
        await c.runAndReadAll(
          `SELECT event_id, endpoint_key, attempts FROM alert_deliveries
           WHERE status = 'pending' AND updated_at > now() - to_milliseconds($age::BIGINT)
           ORDER BY updated_at, event_id`,
          { age: maxAgeMs },
        )
      )
        .getRowObjectsJS()
        .map((r) => ({
          eventId: String(r.event_id),
          endpointKey: String(r.endpoint_key),
          attempts: Number(r.attempts),
        })),
    );
  }

  /** Waits for the writes under way and closes the connection. */
  async close(): Promise<void> {
    await this.#chain.catch(() => undefined);
    const c = await this.#connection?.catch(() => undefined);
    c?.closeSync();
    this.#connection = undefined;
  }

  #write(sql: string, params: Record<string, string | number | null>): Promise<void> {
    return this.#run(async (c) => {
      await c.run(sql, params);
    });
  }

  #run<T>(work: (c: DuckDBConnection) => Promise<T>): Promise<T> {
    const next = this.#chain.then(async () => work(await (this.#connection ??= this.#warehouse.connect())));
    this.#chain = next.catch(() => undefined);
    return next;
  }
}

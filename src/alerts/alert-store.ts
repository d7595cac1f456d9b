import { randomBytes } from 'node:crypto';
import type { DuckDBConnection } from '@duckdb/node-api';
import { redactSecrets } from '../util/redact.js';
import type { AlertDraft, AlertEvent, AlertState, AlertType, Figures } from './alert-event.js';

const COLUMNS = `event_id, type, incident, state, job, run_id, summary, figures, epoch_ms(raised_at)::DOUBLE AS at_ms`;

let sequence = 0;

/**
 * A new event id: sortable by time, then by the order this process raised them (two events of one
 * evaluation share a time), unique (`20261125T230000123Z-000042-1a2b3c4d`).
 */
export function newEventId(at: Date): string {
  sequence = (sequence + 1) % 1_000_000;
  const n = String(sequence).padStart(6, '0');
  return `${at.toISOString().replace(/[-:.]/g, '')}-${n}-${randomBytes(4).toString('hex')}`;
}

/** The incidents whose last event is `open` (the open alerts), with that event. */
export async function openIncidents(connection: DuckDBConnection): Promise<AlertEvent[]> {
  return readEvents(
    connection,
    `SELECT ${COLUMNS} FROM alert_events WHERE state IN ('open', 'resolved')
     QUALIFY row_number() OVER (PARTITION BY incident ORDER BY raised_at DESC, event_id DESC) = 1`,
    {},
    (e) => e.state === 'open',
  );
}

/** Which of `incidents` already have a notice in `alert_events` (a notice is told once). */
export async function noticesTold(
  connection: DuckDBConnection,
  incidents: readonly string[],
): Promise<Set<string>> {
  if (incidents.length === 0) return new Set();
  const rows = await connection.runAndReadAll(
    `SELECT DISTINCT incident FROM alert_events WHERE state = 'notice' AND list_contains($keys::VARCHAR[], incident)`,
    { keys: `[${incidents.map((k) => JSON.stringify(k)).join(',')}]` },
  );
  return new Set(rows.getRowObjectsJS().map((r) => String(r.incident)));
}

/**
 * Appends events to `alert_events` (summary and figures redacted: an upstream error message may echo a
 * secret). Returns them with their ids.
 */
export async function recordEvents(
  connection: DuckDBConnection,
  events: readonly { draft: AlertDraft; state: AlertState }[],
  at: Date,
): Promise<AlertEvent[]> {
  const stored: AlertEvent[] = [];
  for (const { draft, state } of events) {
    const event: AlertEvent = {
      ...draft,
      summary: redactSecrets(draft.summary),
      figures: JSON.parse(redactSecrets(JSON.stringify(draft.figures))) as Figures,
      eventId: newEventId(at),
      state,
      at,
    };
    await connection.run(
      `INSERT INTO alert_events VALUES ($id, $type, $incident, $state, $job, $run, $summary, $figures::JSON, $at::TIMESTAMPTZ)`,
      {
        id: event.eventId,
        type: event.type,
        incident: event.incident,
        state,
        job: event.job,
        run: event.runId,
        summary: event.summary,
        figures: JSON.stringify(event.figures),
        at: at.toISOString(),
      },
    );
    stored.push(event);
  }
  return stored;
}

/** Events of one run, oldest first. */
export async function eventsOfRun(connection: DuckDBConnection, runId: string): Promise<AlertEvent[]> {
  return readEvents(
    connection,
    `SELECT ${COLUMNS} FROM alert_events WHERE run_id = $run ORDER BY raised_at, event_id`,
    {
      run: runId,
    },
  );
}

/** The last `limit` events, newest first. */
export async function recentEvents(connection: DuckDBConnection, limit: number): Promise<AlertEvent[]> {
  return readEvents(
    connection,
    `SELECT ${COLUMNS} FROM alert_events ORDER BY raised_at DESC, event_id DESC LIMIT ${Math.max(1, Math.floor(limit))}`,
    {},
  );
}

/** Events by id (for a delivery that must be sent again). */
export async function eventsById(
  connection: DuckDBConnection,
  ids: readonly string[],
): Promise<AlertEvent[]> {
  if (ids.length === 0) return [];
  return readEvents(
    connection,
    `SELECT ${COLUMNS} FROM alert_events WHERE list_contains($ids::VARCHAR[], event_id) ORDER BY raised_at, event_id`,
    { ids: `[${ids.map((k) => JSON.stringify(k)).join(',')}]` },
  );
}

async function readEvents(
  connection: DuckDBConnection,
  sql: string,
  params: Record<string, string>,
  keep: (e: AlertEvent) => boolean = () => true,
): Promise<AlertEvent[]> {
  const rows = (await connection.runAndReadAll(sql, params)).getRowObjectsJS();
  return rows
    .map((r): AlertEvent => ({
      eventId: String(r.event_id),
      type: String(r.type) as AlertType,
      incident: String(r.incident),
      state: String(r.state) as AlertState,
      job: r.job === null ? null : String(r.job),
      runId: r.run_id === null ? null : String(r.run_id),
      summary: String(r.summary),
      figures: JSON.parse(String(r.figures)) as Figures,
      at: new Date(Number(r.at_ms)),
    }))
    .filter(keep);
}

/**
 * The alert event types (docs/deployment.md, "Alerts"), stable: a webhook receiver and a Prometheus rule
 * key on them.
 * - incidents, which open once and resolve once: `run.failed` → `run.recovered`, `freshness.breached` →
 *   `freshness.restored`, `reconciliation.gap` → `reconciliation.resolved`, `publish.lagging` →
 *   `publish.caught_up`;
 * - notices, told once, with no resolve: `drift.detected`, `quality.flagged`.
 */
export const ALERT_TYPES = [
  'run.failed',
  'run.recovered',
  'drift.detected',
  'freshness.breached',
  'freshness.restored',
  'reconciliation.gap',
  'reconciliation.resolved',
  'quality.flagged',
  'publish.lagging',
  'publish.caught_up',
] as const;

export type AlertType = (typeof ALERT_TYPES)[number];

/** Where an incident stands after an event; a notice has no incident to stand in. */
export type AlertState = 'open' | 'resolved' | 'notice';

/** Figures behind an event: counts, times (ISO 8601), codes. */
export type Figures = Record<string, string | number | boolean | null | readonly unknown[]>;

/** What a rule wants said; {@link AlertEvent} adds the id, the state and the time. */
export interface AlertDraft {
  type: AlertType;
  /** What the event is about; one open incident per key at most (`run:sync-ndjson`, `reconciliation`). */
  incident: string;
  job: string | null;
  runId: string | null;
  /** One sentence a person reads in a chat message or a mail subject. */
  summary: string;
  figures: Figures;
}

/** One row of `alert_events`. */
export interface AlertEvent extends AlertDraft {
  /** Unique, sortable by time: the `webhook-id` of its deliveries. */
  eventId: string;
  state: AlertState;
  /** When it was raised (the clock of the evaluation). */
  at: Date;
}

/**
 * What a rule observed about one incident:
 * - `active: true`: the condition holds; an open event is raised unless the incident is open already;
 * - `active: false`: it is clear; a resolve event is raised when the incident is open;
 * - `active: undefined`: no change either way (hysteresis: a gap opened on N readings stays open until a
 *   reading within the threshold).
 */
export interface Condition {
  incident: string;
  active: boolean | undefined;
  /** The event raised when it opens (its `incident` is the condition's). */
  open: Omit<AlertDraft, 'incident'>;
  /** The event raised when it resolves. */
  resolve: Omit<AlertDraft, 'incident'>;
}

/**
 * The events a set of conditions and notices calls for, given the incidents open now: one open event per
 * incident that becomes active, one resolve per open incident that is clear, a notice once per incident
 * key (`told`: notice keys already recorded). Pure; the one rule of de-duplication (a property test drives
 * it over generated sequences).
 */
export function transitions(
  openIncidents: ReadonlySet<string>,
  told: ReadonlySet<string>,
  conditions: readonly Condition[],
  notices: readonly AlertDraft[] = [],
): { draft: AlertDraft; state: AlertState }[] {
  const out: { draft: AlertDraft; state: AlertState }[] = [];
  for (const c of conditions) {
    const open = openIncidents.has(c.incident);
    if (c.active === true && !open) out.push({ draft: { ...c.open, incident: c.incident }, state: 'open' });
    if (c.active === false && open) {
      out.push({ draft: { ...c.resolve, incident: c.incident }, state: 'resolved' });
    }
  }
  const seen = new Set(told);
  for (const n of notices) {
    if (seen.has(n.incident)) continue;
    seen.add(n.incident);
    out.push({ draft: n, state: 'notice' });
  }
  return out;
}

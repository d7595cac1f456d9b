import { createHash } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { isSlackWebhook, webhookLabel } from '../config/config.js';
import { packageVersion } from '../util/version.js';
import type { AlertEvent } from './alert-event.js';

/** One configured webhook. */
export interface Endpoint {
  url: string;
  /** The URL as it may be shown (`webhookLabel`: path and query redacted). */
  label: string;
  /** A hash of the whole URL: tells endpoints of one host apart in `alert_deliveries`. */
  key: string;
  /** Slack incoming webhooks take a Slack message, unsigned; every other one the signed event. */
  format: 'standard' | 'slack';
}

/** The endpoints of `REPORTS_ALERT_WEBHOOK_URL` (already split and validated by the config). */
export function endpointsOf(urls: readonly string[]): Endpoint[] {
  return urls.map((url) => ({
    url,
    label: webhookLabel(url),
    key: createHash('sha256').update(url).digest('hex').slice(0, 16),
    format: isSlackWebhook(url) ? 'slack' : 'standard',
  }));
}

/**
 * The body of an event as a Standard Webhooks payload (`type`, `timestamp`, `data`): what a receiver
 * verifies and reads. `data` holds the event as `alert_events` stores it.
 */
export function standardBody(event: AlertEvent): string {
  return JSON.stringify({
    type: event.type,
    timestamp: event.at.toISOString(),
    data: {
      id: event.eventId,
      type: event.type,
      state: event.state,
      incident: event.incident,
      job: event.job,
      runId: event.runId,
      summary: event.summary,
      figures: event.figures,
      at: event.at.toISOString(),
    },
  });
}

/** The Slack message of an event (`text` is what Slack shows in notifications too). */
export function slackBody(event: AlertEvent): string {
  const mark = event.state === 'open' ? 'ALERT' : event.state === 'resolved' ? 'RESOLVED' : 'NOTICE';
  const run = event.runId === null ? '' : ` (run ${event.runId})`;
  return JSON.stringify({ text: `[reports-sync] ${mark} ${event.type}: ${event.summary}${run}` });
}

/**
 * The request of one delivery attempt: body and headers, signed per the Standard Webhooks spec
 * (`webhook-id` = the event id, `webhook-timestamp` = now in seconds, `webhook-signature` = `v1,<base64
 * HMAC-SHA256>` by the `standardwebhooks` package) unless the endpoint is a Slack one.
 *
 * @param secret `REPORTS_ALERT_WEBHOOK_SECRET` (`whsec_…`); required for a standard endpoint
 */
export function deliveryRequest(
  endpoint: Endpoint,
  event: AlertEvent,
  secret: string | undefined,
  now: Date,
): { body: string; headers: Record<string, string> } {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': `reports-sync/${packageVersion()}`,
  };
  if (endpoint.format === 'slack') return { body: slackBody(event), headers };
  const body = standardBody(event);
  if (secret === undefined) throw new Error('a standard webhook needs REPORTS_ALERT_WEBHOOK_SECRET');
  const signature = new Webhook(secret).sign(event.eventId, now, body);
  return {
    body,
    headers: {
      ...headers,
      'webhook-id': event.eventId,
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': signature,
    },
  };
}

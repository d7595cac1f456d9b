import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Webhook } from 'standardwebhooks';

/** A new Standard Webhooks secret (`whsec_` + 32 random bytes in base64). */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** One request the receiver got. */
export interface Received {
  headers: IncomingMessage['headers'];
  body: string;
  /** Whether its signature verified with the receiver's secret (standardwebhooks' `verify`). */
  verified: boolean;
  /** The parsed body. */
  json: { type?: string; data?: Record<string, unknown>; text?: string };
  /** The status it was answered (or would have been, for a request cut by the sender's timeout). */
  answered: number;
}

/** How the receiver answers its n-th request (1-based): a status, after a delay. */
export type Behaviour = (n: number) => { status: number; delayMs?: number };

/** A webhook receiver on 127.0.0.1 (port 0) that verifies signatures and counts deliveries. */
export interface WebhookReceiver {
  url: string;
  received: Received[];
  /** Requests whose signature verified and that were answered 2xx. */
  delivered(): Received[];
  setBehaviour(b: Behaviour): void;
  close(): Promise<void>;
}

/** Starts a receiver that verifies each request with `secret` and answers as `behaviour` says (default 204). */
export async function startWebhookReceiver(
  secret: string,
  behaviour: Behaviour = () => ({ status: 204 }),
): Promise<WebhookReceiver> {
  const wh = new Webhook(secret);
  const received: Received[] = [];
  let answer = behaviour;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let verified = true;
      try {
        wh.verify(body, req.headers as Record<string, string>);
      } catch {
        verified = false;
      }
      const { status, delayMs = 0 } = answer(received.length + 1);
      received.push({
        headers: req.headers,
        body,
        verified,
        json: JSON.parse(body) as Received['json'],
        answered: status,
      });
      void sleep(delayMs).then(() => {
        if (!res.destroyed) res.writeHead(status).end();
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks/reports?token=abc123secret`,
    received,
    delivered: () => received.filter((r) => r.verified && r.answered >= 200 && r.answered < 300),
    setBehaviour: (b) => (answer = b),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

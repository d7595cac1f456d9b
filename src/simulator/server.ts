import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  PUBLIC_PATHS,
  PUBLIC_PREFIX,
  validatePublicQuery,
  type CsvQuery,
  type GeojsonQuery,
  type ListQuery,
  type PublicEndpoint,
} from '../schema/public-query.js';
import { SyncError, errorMessage } from '../util/errors.js';
import { silentLogger, type Logger } from '../util/logger.js';
import { ADMIN_PREFIX, handleAdmin, type AdminControls } from './admin.js';
import type { AdvanceSummary, Dataset } from './dataset.js';
import { FaultSet, type FaultSpec } from './faults.js';
import { formatFaultSpec, normalizeFaults } from './parse-fault-spec.js';
import { RequestLog, type RequestLogEntry } from './request-log.js';
import { sendApiError, sendError } from './respond.js';
import {
  CSV_EXPORT_PATH,
  LOGIN_PATH,
  LOOP_PATH,
  NO_BODY_FAULTS,
  type BodyFaults,
  type RouteContext,
} from './route-context.js';
import { redirectCsv, serveCsvPage } from './serve-csv.js';
import { serveGeojson } from './serve-geojson.js';
import { serveList } from './serve-list.js';
import { serveNdjson } from './serve-ndjson.js';
import { serveStats } from './serve-stats.js';

/** Options of {@link startSimulator}. */
export interface SimulatorOptions {
  dataset: Dataset;
  /** TCP port; 0 (default) picks a free one. */
  port?: number;
  /** Interface to bind (default `127.0.0.1`). */
  host?: string;
  /** Initial fault switches (objects or compact strings, see parse-fault-spec.ts). */
  faults?: ReadonlyArray<FaultSpec | string>;
  /** Request log lines (`info`: method, path, status, ms) go here; default: silent. */
  logger?: Logger;
  /**
   * Keep the NDJSON export and each CSV page of a data state in this folder once served whole without
   * faults, and serve them from there (static files, as real services serve exports) while the state lasts.
   * Default: none (every export and page is generated on every request). The caller owns and removes the
   * folder.
   */
  exportCacheDir?: string;
}

/** A running simulator. Every admin endpoint has its in-process twin here. */
export interface SimulatorHandle {
  /** Base URL without trailing slash, e.g. `http://127.0.0.1:41234`; the public API is under `/api/v1/public`. */
  readonly url: string;
  readonly port: number;
  readonly dataset: Dataset;
  /** Replaces the fault set (counters restart). @throws SyncError `FAULT_SPEC_INVALID` */
  setFaults(faults: ReadonlyArray<FaultSpec | string>): void;
  clearFaults(): void;
  /** The active faults with how many requests each has applied to. */
  faults(): Array<FaultSpec & { used: number }>;
  /** Moves the dataset forward (see `Dataset.advanceDays`). */
  advanceDays(days: number): AdvanceSummary;
  /** The last 10,000 requests, oldest first, headers verbatim. */
  requests(): RequestLogEntry[];
  clearRequests(): void;
  /** Stops listening and destroys every open connection (stalled ones too); idempotent. */
  close(): Promise<void>;
}

/** Which public endpoint a path serves; `entry` is the CSV redirect, `page` the CSV file itself. */
const ROUTES = new Map<string, { endpoint: PublicEndpoint; stage: 'entry' | 'page' | 'only' }>([
  [PUBLIC_PATHS.list, { endpoint: 'list', stage: 'only' }],
  [PUBLIC_PATHS.ndjson, { endpoint: 'ndjson', stage: 'only' }],
  [PUBLIC_PATHS.csv, { endpoint: 'csv', stage: 'entry' }],
  [CSV_EXPORT_PATH, { endpoint: 'csv', stage: 'page' }],
  [PUBLIC_PATHS.geojson, { endpoint: 'geojson', stage: 'only' }],
  [PUBLIC_PATHS.stats, { endpoint: 'stats', stage: 'only' }],
]);

/**
 * Starts the upstream simulator (docs/architecture.md): a real `node:http` server on loopback that plays the
 * public API of docs/upstream-contract.md under `/api/v1/public` (list, NDJSON/CSV exports, GeoJSON, stats), with the
 * fault switches of faults.ts and the admin endpoints of admin.ts.
 *
 * Order of work per public request: route (404) → method (405, `Allow: GET, HEAD`) → query (400, the shared
 * validation of public-query.ts) → `latency` → `status` → `redirect` → the body with its body faults. On
 * the CSV endpoint, `redirect` faults replace the redirect of `/reports.csv`; every other fault applies to
 * the page at the export location.
 *
 * @throws SyncError `SIMULATOR_LISTEN` (exit 2) when the port cannot be bound;
 *   `FAULT_SPEC_INVALID` for a bad initial fault
 * @example
 * const sim = await startSimulator({ dataset: generateDataset(1000, 7), faults: ['ndjson:status=503,times=1'] });
 * const res = await fetch(`${sim.url}/api/v1/public/reports.ndjson`); // 503, then 200 on the retry
 * await sim.close();
 */
export async function startSimulator(options: SimulatorOptions): Promise<SimulatorHandle> {
  const { dataset } = options;
  const host = options.host ?? '127.0.0.1';
  const logger = options.logger ?? silentLogger();
  const faults = new FaultSet(normalizeFaults(options.faults ?? []));
  const log = new RequestLog();
  const sockets = new Set<Socket>();
  const closing = new AbortController();
  let regenerations = 0;

  const controls: AdminControls = {
    advanceDays: (days) => {
      const summary = dataset.advanceDays(days);
      logger.info({ ...summary }, 'dataset advanced');
      return summary;
    },
    setFaults: (list) => {
      faults.replace(normalizeFaults(list));
      logger.info({ faults: faults.list().map(formatFaultSpec) }, 'faults set');
    },
    clearFaults: () => faults.replace([]),
    faults: () => faults.list(),
    requests: () => log.list(),
    clearRequests: () => log.clear(),
  };

  const server = createServer((req, res) => {
    const started = performance.now();
    const entry = log.add(req);
    res.once('close', () => {
      entry.status = res.statusCode;
      logger.info(
        {
          method: entry.method,
          path: entry.path,
          status: res.statusCode,
          ms: Math.round(performance.now() - started),
        },
        'request',
      );
    });
    const respond = () =>
      handle(req, res).catch((err: unknown) => {
        logger.error({ err, path: req.url }, 'simulator request failed');
        if (!res.headersSent) sendError(req, res, 500, 'INTERNAL', `Simulator error: ${errorMessage(err)}`);
        else res.destroy();
      });
    // A request that arrives on a keep-alive connection before the previous response finished (its
    // client had every byte, node had not yet emitted 'finish') gets a response with no socket yet: node
    // assigns one when the previous response finishes. Bodies (and the faults, which write on the socket
    // itself) need it: answering without it threw and closed the connection under the client.
    if (res.socket) void respond();
    else res.once('socket', () => void respond());
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // Absolute URLs (Location, Link) use the origin the client addressed; a broken Host header falls back.
    const own = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
    const origin =
      req.headers.host && URL.canParse(`http://${req.headers.host}`) ? `http://${req.headers.host}` : own;
    // Origin-form targets are paths (RFC 9112 §3.2.1): `//a/b` is the path `//a/b`, not the host `a`.
    const target = req.url ?? '/';
    const href = target.startsWith('/') ? `${origin}${target}` : target;
    const url = URL.canParse(href) ? new URL(href) : new URL('/', origin);
    const method = req.method ?? 'GET';
    if (url.pathname.startsWith(`${ADMIN_PREFIX}/`)) return handleAdmin(req, res, url, controls);
    if (url.pathname === LOGIN_PATH || url.pathname === LOOP_PATH) {
      if (method !== 'GET' && method !== 'HEAD') return notAllowed(req, res, url);
      return url.pathname === LOGIN_PATH ? loginPage(req, res) : loopBack(req, res, url);
    }
    const route = ROUTES.get(url.pathname);
    if (route === undefined) {
      const known = Object.values(PUBLIC_PATHS).join(', ');
      return sendError(
        req,
        res,
        404,
        'NOT_FOUND',
        `No resource at ${url.pathname} (public endpoints: ${known}).`,
      );
    }
    if (method !== 'GET' && method !== 'HEAD') return notAllowed(req, res, url);
    const validation = validatePublicQuery(route.endpoint, url.searchParams);
    if (!validation.ok) return sendApiError(req, res, validation.status, validation.body);

    const { endpoint, stage } = route;
    const ctx: RouteContext = {
      req,
      res,
      url,
      data: dataset.snapshot(),
      head: method === 'HEAD',
      faults: NO_BODY_FAULTS,
      regeneration: 0,
    };
    if (stage !== 'entry') {
      const delay = faults.take(endpoint, 'latency').reduce((sum, f) => sum + f.ms, 0);
      if (delay > 0) {
        try {
          await sleep(delay, undefined, { signal: closing.signal });
        } catch {
          res.destroy();
          return;
        }
      }
      const [status] = faults.take(endpoint, 'status', 1);
      if (status) {
        const headers: Record<string, string> = {};
        if (status.retryAfter !== undefined) {
          headers['Retry-After'] =
            status.retryAfterForm === 'date'
              ? new Date(Date.now() + status.retryAfter * 1000).toUTCString()
              : String(status.retryAfter);
        }
        // The codes of the public error body (public-query.ts ApiErrorBody).
        const code =
          status.status === 429
            ? 'RATE_LIMITED'
            : status.status === 503
              ? 'UNAVAILABLE'
              : status.status >= 500
                ? 'INTERNAL'
                : 'SIMULATED_FAULT';
        return sendError(
          req,
          res,
          status.status,
          code,
          `Simulated ${status.status} (fault on ${endpoint}).`,
          headers,
        );
      }
    }
    if (stage !== 'page') {
      const [redirect] = faults.take(endpoint, 'redirect', 1);
      if (redirect) return sendRedirect(ctx, redirect);
    }
    if (stage === 'entry') return redirectCsv(ctx);

    // One data state per response, taken when the body starts (after any latency): validators and body agree.
    ctx.data = dataset.snapshot();
    if (!ctx.head) ctx.faults = takeBodyFaults(endpoint);
    if (ctx.faults.regenerate) ctx.regeneration = ++regenerations;
    switch (endpoint) {
      case 'ndjson':
        return serveNdjson({ ...ctx, exportCacheDir: options.exportCacheDir });
      case 'csv':
        return serveCsvPage({ ...ctx, exportCacheDir: options.exportCacheDir }, validation.query as CsvQuery);
      case 'list':
        return serveList(ctx, validation.query as ListQuery);
      case 'geojson':
        return serveGeojson(ctx, validation.query as GeojsonQuery);
      case 'stats':
        return serveStats(ctx);
    }
  }

  function takeBodyFaults(endpoint: PublicEndpoint): BodyFaults {
    return {
      stall: faults.take(endpoint, 'stall', 1)[0],
      reset: faults.take(endpoint, 'reset', 1)[0],
      cut: faults.take(endpoint, 'cut', 1)[0],
      chunkedCut: faults.take(endpoint, 'chunkedCut', 1)[0],
      malformed: faults.take(endpoint, 'malformed'),
      giant: faults.take(endpoint, 'giant'),
      duplicates: faults.take(endpoint, 'duplicates', 1)[0],
      csvWarts: faults.take(endpoint, 'csvWart'),
      ignorePage: faults.take(endpoint, 'ignorePage', 1).length > 0,
      regenerate: faults.take(endpoint, 'regenerate', 1).length > 0,
      noValidators: faults.take(endpoint, 'noValidators', 1).length > 0,
      capPageSize: faults.take(endpoint, 'capPageSize', 1)[0]?.rows,
      emptyPages: faults.take(endpoint, 'emptyPage').flatMap((f) => f.at),
    };
  }

  function sendRedirect(ctx: RouteContext, fault: Extract<FaultSpec, { kind: 'redirect' }>): void {
    const { url, res } = ctx;
    const here = `${url.pathname}${url.search}`;
    let location: string;
    if (fault.target === 'loop') {
      location = `${url.origin}${LOOP_PATH}?to=${encodeURIComponent(here)}`;
    } else if (fault.target === 'login') {
      location = `${url.origin}${LOGIN_PATH}?next=${encodeURIComponent(here)}`;
    } else {
      const to = fault.to ?? '';
      const base = /^\d+$/.test(to) ? `${url.protocol}//${url.hostname}:${to}` : to.replace(/\/+$/, '');
      location = `${base}${here}`;
    }
    res.writeHead(fault.code ?? 302, { Location: location, 'Content-Type': 'text/plain; charset=utf-8' });
    res.end(ctx.head ? undefined : `Redirecting to ${location}\n`);
  }

  function loopBack(req: IncomingMessage, res: ServerResponse, url: URL): void {
    const to = url.searchParams.get('to') ?? '';
    // Only paths on this origin: the loop must not become an open redirect.
    const target =
      to.startsWith('/') && !to.startsWith('//')
        ? `${url.origin}${to}`
        : `${url.origin}${PUBLIC_PREFIX}/reports`;
    res.writeHead(302, { Location: target, 'Content-Type': 'text/plain; charset=utf-8' });
    res.end(req.method === 'HEAD' ? undefined : `Redirecting to ${target}\n`);
  }

  const listening = new Promise<void>((resolve, reject) => {
    server.once('error', (err) =>
      reject(
        new SyncError('SIMULATOR_LISTEN', `Cannot listen on ${host}:${options.port ?? 0}: ${err.message}`, {
          cause: err,
          context: { host, port: options.port ?? 0 },
        }),
      ),
    );
    server.listen(options.port ?? 0, host, () => resolve());
  });
  await listening;
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : (options.port ?? 0);
  const shownHost =
    host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  const url = `http://${shownHost}:${port}`;
  logger.info({ url, dataset: dataset.label, version: dataset.version }, 'simulator listening');

  let closed: Promise<void> | null = null;
  return {
    url,
    port,
    dataset,
    ...controls,
    close() {
      closed ??= new Promise<void>((resolve) => {
        closing.abort();
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      });
      return closed;
    },
  };
}

function notAllowed(req: IncomingMessage, res: ServerResponse, url: URL): void {
  sendError(
    req,
    res,
    405,
    'METHOD_NOT_ALLOWED',
    `${req.method ?? ''} is not allowed on ${url.pathname} (allowed: GET, HEAD).`,
    {
      Allow: 'GET, HEAD',
    },
  );
}

const LOGIN_HTML = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Sign in – Citizen Reports</title></head>
<body>
<h1>Sign in</h1>
<form method="post" action="/login"><label>E-mail <input name="email"></label>
<label>Password <input name="password" type="password"></label><button>Sign in</button></form>
</body>
</html>
`;

/** The sign-in page of the `redirect=login` fault: 200 `text/html`, what a misconfigured proxy serves. */
function loginPage(req: IncomingMessage, res: ServerResponse): void {
  res.writeHead(200, {
    'Content-Type': 'text/html; charset=utf-8',
    'Content-Length': Buffer.byteLength(LOGIN_HTML),
  });
  res.end(req.method === 'HEAD' ? undefined : LOGIN_HTML);
}

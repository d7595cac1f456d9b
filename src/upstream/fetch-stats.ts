import { requestOptions } from './request-options.js';
import type { Dispatcher } from 'undici';
import { apiUrl, type Config } from '../config/config.js';
import { loneSurrogatePath } from '../schema/flatten-stats.js';
import { canonicalJsonText, jsonDepth, repeatedJsonKey } from '../schema/json-text.js';
import { SyncError } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import { charsetOf, toUtf8 } from './charset.js';
import { header, networkError, notAtPath } from './http-answers.js';
import { openStream } from './open-stream.js';
import { withRetry } from './with-retry.js';

/** The aggregate counters as the upstream answered them. */
export interface UpstreamStats {
  /** The parsed JSON body, whatever its shape (the upstream names no field: docs/upstream-contract.md). */
  body: unknown;
  /**
   * The body's JSON text as stored in `stats_snapshots`: white space dropped, numbers as sent
   * (`12345678901234567890`, `1e400`, `1.0`: the parsed body holds their doubles).
   */
  text: string;
  /** URL that answered, without secrets. */
  url: string;
  etag?: string | undefined;
}

/** What {@link fetchStats} needs. */
export interface FetchStatsOptions {
  config: Config;
  dispatcher: Dispatcher;
  logger: Logger;
  signal?: AbortSignal | undefined;
}

/**
 * Deepest nesting of arrays and objects a `/stats` body may have (counters nest a level or two:
 * docs/upstream-contract.md, "Aggregate counters").
 */
const MAX_STATS_DEPTH = 64;

/**
 * GETs the aggregate counters (`REPORTS_STATS_PATH`, default `/api/v1/public/reports/stats`;
 * docs/upstream-contract.md: "Aggregate counters") with the retries, redirects and key handling of every upstream call, and parses the body as
 * JSON of any shape. The body is bounded by `REPORTS_MAX_RECORD_BYTES`.
 *
 * @throws SyncError `STATS_INVALID` (body not valid text in its charset, not JSON, too large, nested deeper than 64 levels, an object
 *   giving a key twice, or a lone surrogate in a key or string), or what openStream throws after retries
 */
export async function fetchStats(options: FetchStatsOptions): Promise<UpstreamStats> {
  const { config } = options;
  const url = apiUrl(config, config.statsPath).toString();
  return withRetry(
    'stats',
    config,
    options.logger,
    async () => {
      const res = await openStream(
        url,
        requestOptions(config, options, url, { accept: 'application/json', deadline: 'page' }),
      ).catch((err: unknown) => {
        throw notAtPath(err, 'REPORTS_STATS_PATH');
      });
      const chunks: Buffer[] = [];
      let size = 0;
      try {
        for await (const chunk of res.body as AsyncIterable<Buffer>) {
          size += chunk.length;
          if (size > config.maxRecordBytes) {
            throw new SyncError(
              'STATS_INVALID',
              `The stats body of ${res.url} is over ${config.maxRecordBytes} bytes (REPORTS_MAX_RECORD_BYTES)`,
              { context: { url: res.url, limit: config.maxRecordBytes } },
            );
          }
          chunks.push(Buffer.from(chunk));
        }
      } catch (err) {
        throw networkError(err, res.url);
      } finally {
        res.body.destroy();
      }
      const text = statsText(Buffer.concat(chunks, size), header(res.headers, 'content-type'), res.url);
      let body: unknown;
      try {
        body = JSON.parse(text) as unknown;
      } catch (err) {
        throw new SyncError(
          'STATS_INVALID',
          `The stats body of ${res.url} is not JSON (${(err as Error).message}): check REPORTS_STATS_PATH`,
          { context: { url: res.url, excerpt: text.slice(0, 200) }, cause: err },
        );
      }
      // Counters nest a few levels; a body nested deeper is no counters body, and walking it would overflow
      // the stack (its metrics, its snapshot's JSON text).
      const depth = jsonDepth(text);
      if (depth > MAX_STATS_DEPTH) {
        throw new SyncError(
          'STATS_INVALID',
          `The stats body of ${res.url} nests ${depth} levels deep, more than the ${MAX_STATS_DEPTH} a counters ` +
            'body may: it is not used (check REPORTS_STATS_PATH)',
          { context: { url: res.url, depth } },
        );
      }
      // JSON.parse keeps the last of two equal keys: a counter given twice is refused, never one of them kept.
      const repeated = repeatedJsonKey(text);
      if (repeated) {
        throw new SyncError(
          'STATS_INVALID',
          `The stats body of ${res.url} gives the key ${JSON.stringify(repeated.key)} twice (at ${repeated.path}): ` +
            'which value is meant cannot be told, so the body is not used',
          { context: { url: res.url, key: repeated.key, path: repeated.path } },
        );
      }
      // A key or string with a lone surrogate has no UTF-8 form: no snapshot could store the body.
      const lone = loneSurrogatePath(body);
      if (lone !== undefined) {
        throw new SyncError(
          'STATS_INVALID',
          `The stats body of ${res.url} holds a lone UTF-16 surrogate (at ${lone}), text with no UTF-8 form: ` +
            'it is not used',
          { context: { url: res.url, path: lone } },
        );
      }
      return { body, text: canonicalJsonText(text), url: res.url, etag: header(res.headers, 'etag') };
    },
    options.signal,
  );
}

/**
 * The text of a `/stats` body: decoded from its declared charset (or byte order mark) as the exports are
 * (charset.ts), then read as UTF-8 strictly. A leading BOM is dropped (RFC 8259 §8.1 lets a parser ignore
 * it; JSON.parse does not).
 *
 * @throws SyncError `STATS_INVALID` for bytes not valid in the body's charset (a counter's name read with
 *   U+FFFD in it would be stored under a name the upstream never gave), or as charsetDecoder throws
 */
function statsText(body: Buffer, contentType: string | undefined, url: string): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(toUtf8(body, charsetOf(contentType), url));
  } catch (err) {
    throw new SyncError(
      'STATS_INVALID',
      `The stats body of ${url} is not valid text in its charset (${contentType ?? 'no Content-Type'}): ` +
        `it is not used (${err instanceof Error ? err.message : String(err)})`,
      { context: { url, contentType }, cause: err },
    );
  }
}

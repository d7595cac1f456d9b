import type { Dispatcher } from 'undici';
import { requireBaseUrl, type Config } from '../config/config.js';
import { minSpeedOf, type RequestDeadline } from './body-limits.js';
import type { OpenStreamOptions } from './open-stream.js';

/** What a request adds to the configuration's options: its `Accept`, other headers, its deadline. */
export interface RequestShape {
  /** The `Accept` header. */
  accept: string;
  /** Further headers (a conditional request's `If-None-Match`, `If-Modified-Since`). */
  headers?: Record<string, string> | undefined;
  /** Which deadline bounds the whole request: the export's (`REPORTS_EXPORT_DEADLINE_MS`) or a page's. */
  deadline: 'export' | 'page';
}

/**
 * The options of {@link openStream} for one upstream GET, the same for every source and `/stats`: the
 * dispatcher, redirects (`REPORTS_MAX_REDIRECTS`), the slowest body accepted, the deadline, and the key
 * (`REPORTS_API_KEY`, sent as `X-API-Key` only to the origin of `REPORTS_BASE_URL`: never to another origin,
 * not even one a `Link` names; openStream also drops it when a redirect leaves the origin).
 */
export function requestOptions(
  config: Config,
  via: { dispatcher: Dispatcher; signal?: AbortSignal | undefined },
  url: URL | string,
  shape: RequestShape,
): OpenStreamOptions {
  return {
    dispatcher: via.dispatcher,
    apiKey: keyFor(config, new URL(url)),
    maxRedirects: config.maxRedirects,
    minSpeed: minSpeedOf(config),
    signal: via.signal,
    headers: { accept: shape.accept, ...shape.headers },
    deadline: deadlineOf(config, shape.deadline),
  };
}

/** The API key for `url`: only on the configured base URL's origin. */
function keyFor(config: Config, url: URL): string | undefined {
  return new URL(requireBaseUrl(config)).origin === url.origin ? config.apiKey : undefined;
}

function deadlineOf(config: Config, kind: 'export' | 'page'): RequestDeadline {
  return kind === 'export'
    ? { ms: config.exportDeadlineMs, setting: 'REPORTS_EXPORT_DEADLINE_MS' }
    : { ms: config.pageDeadlineMs, setting: 'REPORTS_PAGE_DEADLINE_MS' };
}

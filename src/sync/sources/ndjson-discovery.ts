import { apiUrl, type Config } from '../../config/config.js';
import { DEFAULT_NDJSON_PATH } from '../../config/settings.js';
import { header } from '../../upstream/http-answers.js';
import { doubledPrefixHint } from '../../upstream/url-mistakes.js';
import type { OpenResponse } from '../../upstream/open-stream.js';
import { isSyncError, SyncError } from '../../util/errors.js';
import { safeUrl } from '../../util/safe-url.js';
import type { Logger } from '../../util/logger.js';

/** `Accept` of the configured (or default) NDJSON path: any answer is read as the export. */
export const NDJSON_ACCEPT = 'application/x-ndjson, application/json;q=0.9, */*;q=0.1';

/** `Accept` of a candidate shared with the list endpoint: only newline-delimited JSON will do. */
const STRICT_ACCEPT = 'application/x-ndjson, application/ndjson, application/jsonl, application/x-jsonlines';

/** The media types of newline-delimited JSON as services name it (no registered one exists). */
const NDJSON_TYPE = /^application\/(x-)?(ndjson|jsonl|jsonlines|json-lines|json-seq)\b/i;

/** Answers that say "not here" of a path or of a format (400: an unknown `format`; 406: no such type). */
const NOT_HERE = new Set([400, 404, 405, 406, 410, 415, 501]);

/** One place the NDJSON export may be. */
export interface ExportCandidate {
  url: URL;
  /** The request's `Accept`: every page of the export is asked with it. */
  accept: string;
  /**
   * Whether a 2xx with this `Content-Type` (`''` when none) is the export: any for the configured path;
   * not plain JSON or HTML for another file path (a service answering every path with its list page);
   * only newline-delimited JSON where the URL also serves the JSON list.
   */
  takes: (contentType: string) => boolean;
  /** How the place is named in logs and errors. */
  label: string;
  /** The `REPORTS_NDJSON_PATH` that names this place, when a path alone can (not for `Accept` or a query). */
  path: string | undefined;
  /**
   * Asked conditionally (the last complete run's validators): only the first place. The run log does not
   * keep where a run found the export, and a list answering 304 for another resource's date is no export.
   */
  conditional: boolean;
}

/**
 * Where the NDJSON export is asked, in order. The upstream does not show its path ("NDJSON endpoint path: not
 * shown"), so unless `REPORTS_NDJSON_PATH` is set, the default path is asked first and then the forms
 * services give such an export: `/api/v1/public/reports.jsonl` and `.ndjson.gz`, then the list path
 * (`REPORTS_LIST_PATH`) with `?format=ndjson`, and asked for `application/x-ndjson`. A path that is set is
 * the only candidate.
 */
export function exportCandidates(config: Config): ExportCandidate[] {
  const at = (path: string, accept: string, takes: ExportCandidate['takes'], conditional = false) => {
    const url = apiUrl(config, path);
    return { url, accept, takes, label: safeUrl(url), path, conditional };
  };
  const first = at(config.ndjsonPath, NDJSON_ACCEPT, () => true, true);
  if (config.ndjsonPath !== DEFAULT_NDJSON_PATH) return [first];
  const base = DEFAULT_NDJSON_PATH.replace(/\.ndjson$/, '');
  const format = at(config.listPath, STRICT_ACCEPT, isNdjsonType);
  format.url.searchParams.set('format', 'ndjson');
  const negotiated = at(config.listPath, STRICT_ACCEPT, isNdjsonType);
  return [
    first,
    at(`${base}.jsonl`, NDJSON_ACCEPT, notJsonDocument),
    at(`${base}.ndjson.gz`, NDJSON_ACCEPT, notJsonDocument),
    { ...format, label: safeUrl(format.url), path: undefined },
    { ...negotiated, label: `${negotiated.label} (Accept: application/x-ndjson)`, path: undefined },
  ];
}

/**
 * Opens the first candidate ({@link exportCandidates}) that answers with the export, through `open` (which
 * makes the request, conditional or not, and may return `not-modified`), and returns it with its answer. A
 * candidate answering 400, 404, 405, 406, 410, 415 or 501 is not the export, nor is a 2xx of a type the
 * candidate does not take; any other failure (429, 5xx, the network, a 401) is the run's, thrown as it
 * came. Logs where the export was found when that is not the first place.
 *
 * @throws SyncError `NDJSON_EXPORT_NOT_FOUND` when no candidate is the export: the message lists each
 *   place asked and its answer, and names `REPORTS_NDJSON_PATH` and `--source csv`
 */
export async function openFoundExport<T extends OpenResponse | 'not-modified'>(
  config: Config,
  logger: Logger,
  open: (candidate: ExportCandidate) => Promise<T>,
): Promise<{ res: T; candidate: ExportCandidate }> {
  const candidates = exportCandidates(config);
  const asked: string[] = [];
  for (const [i, candidate] of candidates.entries()) {
    let res: T;
    try {
      res = await open(candidate);
    } catch (err) {
      // A base URL holding the API's prefix: the 404's own message says so (url-mistakes.ts).
      if (candidates.length === 1 || !isNotHere(err) || doubledPrefixHint(candidate.url)) throw err;
      asked.push(`${candidate.label}: HTTP ${String((err as SyncError).context.status)}`);
      continue;
    }
    if (res !== 'not-modified' && !takenBy(candidate, res)) {
      res.body.on('error', () => undefined);
      res.body.destroy();
      asked.push(`${candidate.label}: ${res.status} with ${contentTypeOf(res) || 'no Content-Type'}`);
      continue;
    }
    if (i > 0) {
      // A path can be set; a query or an `Accept` cannot (set, the path would take the JSON list too).
      const hint =
        candidate.path === undefined
          ? ''
          : `: REPORTS_NDJSON_PATH=${candidate.path} skips the search and asks it conditionally`;
      logger.info({ url: candidate.label, notAt: asked }, `NDJSON export found at ${candidate.label}${hint}`);
    }
    return { res, candidate };
  }
  throw new SyncError(
    'NDJSON_EXPORT_NOT_FOUND',
    `No NDJSON export found (the upstream does not show its path). Asked: ${asked.join('; ')}. ` +
      'Set REPORTS_NDJSON_PATH to its path, or sync the CSV export (--source csv); ' +
      "if /stats answers 404 too, REPORTS_BASE_URL is not the service's root",
    { context: { asked } },
  );
}

/** Whether the answer `res` to `candidate` (a later page of it too) is of a type the candidate takes. */
export function takenBy(candidate: ExportCandidate, res: OpenResponse): boolean {
  return candidate.takes(contentTypeOf(res));
}

function contentTypeOf(res: OpenResponse): string {
  return header(res.headers, 'content-type') ?? '';
}

function isNotHere(err: unknown): boolean {
  return isSyncError(err, 'HTTP_STATUS') && NOT_HERE.has(Number(err.context.status));
}

function isNdjsonType(contentType: string): boolean {
  return NDJSON_TYPE.test(contentType);
}

function notJsonDocument(contentType: string): boolean {
  return !/^(application\/(geo\+)?json|text\/html)\b/i.test(contentType);
}

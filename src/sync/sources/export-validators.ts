import { header } from '../../upstream/http-answers.js';
import type { ExportValidator } from '../export-source.js';
import { parseHttpDate } from '../../util/http-date.js';

/**
 * The validators of an answer (an export, a CSV page, a list page) that can tell a version of the export:
 * its `ETag`, and its `Last-Modified` only when the answer's `Date` is at least a second later. Last-Modified
 * has one-second precision, so a second change within that second keeps it; RFC 9110 §8.8.2.2 deems it
 * strong only with a `Date` one second after it. Without that (no `Date`, or a server stamping each answer
 * with the time it was made) it names no version: it is neither recorded, nor sent as `If-Modified-Since`
 * (a 304 would hide the change of that second), nor taken to prove that two pages are of one version.
 */
export function pageValidator(headers: Record<string, string | string[] | undefined>): ExportValidator {
  const lastModified = header(headers, 'last-modified');
  const modified = lastModified === undefined ? undefined : parseHttpDate(lastModified);
  const answered = parseHttpDate(header(headers, 'date') ?? '');
  const strong = modified !== undefined && answered !== undefined && answered - modified >= 1000;
  return { etag: header(headers, 'etag'), lastModified: strong ? lastModified : undefined };
}

/**
 * The `Age` of an answer in seconds (RFC 9111 §5.1: the time it spent in a cache), when a cache served it
 * and says so with a valid value; undefined otherwise.
 */
export function cacheAgeOf(headers: Record<string, string | string[] | undefined>): number | undefined {
  const age = header(headers, 'age')?.trim();
  return age !== undefined && /^\d{1,10}$/.test(age) ? Number(age) : undefined;
}

/** An entity tag's opaque part: `W/"x"` and `"x"` name the same version by weak comparison (RFC 9110 §8.8.3.2). */
function opaqueTag(etag: string): string {
  return etag.startsWith('W/') ? etag.slice(2) : etag;
}

/**
 * Whether two validators tell the same version of the export: ETags when both have one (weak comparison: a
 * server that compresses only its larger answers marks just their tags weak, as nginx does), else
 * Last-Modified when both have one; `unknown` without a common validator (nothing can be told).
 */
export function compareValidators(a: ExportValidator, b: ExportValidator): 'same' | 'changed' | 'unknown' {
  if (a.etag !== undefined && b.etag !== undefined) {
    return opaqueTag(a.etag) === opaqueTag(b.etag) ? 'same' : 'changed';
  }
  if (a.lastModified !== undefined && b.lastModified !== undefined) {
    return a.lastModified === b.lastModified ? 'same' : 'changed';
  }
  return 'unknown';
}

/** Whether the response carried a validator at all. */
export function hasValidator(v: ExportValidator): boolean {
  return v.etag !== undefined || v.lastModified !== undefined;
}

/** A validator as a log or error message names it. */
export function describeValidator(v: ExportValidator): string {
  if (v.etag !== undefined) return `ETag ${v.etag}`;
  if (v.lastModified !== undefined) return `Last-Modified ${v.lastModified}`;
  return '(none)';
}

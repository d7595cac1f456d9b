import { header } from '../../upstream/open-stream.js';
import type { ExportValidator } from '../export-source.js';

/**
 * The validators of a page answer that can tell a version of the export: its `ETag`, and its
 * `Last-Modified` unless that is not before the answer's `Date` (a server stamping each answer with the time
 * it was made: RFC 9110 §8.8.2.1 has a later date replaced by `Date`, so it names no version).
 */
export function pageValidator(headers: Record<string, string | string[] | undefined>): ExportValidator {
  const lastModified = header(headers, 'last-modified');
  const modified = lastModified === undefined ? NaN : Date.parse(lastModified);
  const answered = Date.parse(header(headers, 'date') ?? '');
  const stamped = !Number.isNaN(modified) && !Number.isNaN(answered) && modified >= answered;
  return { etag: header(headers, 'etag'), lastModified: stamped ? undefined : lastModified };
}

/**
 * Whether two validators tell the same version of the export: ETags when both have one, else Last-Modified
 * when both have one; `unknown` without a common validator (nothing can be told).
 */
export function compareValidators(a: ExportValidator, b: ExportValidator): 'same' | 'changed' | 'unknown' {
  if (a.etag !== undefined && b.etag !== undefined) return a.etag === b.etag ? 'same' : 'changed';
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

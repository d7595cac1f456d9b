import type { ExportValidator } from '../export-source.js';

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

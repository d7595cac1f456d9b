import { scanJsonObject } from '../../schema/json-text.js';
import { normalizeTimestamp } from '../../schema/timestamp.js';
import { isModelledKey } from '../../schema/wire-format.js';
import type { StoredWire } from '../../warehouse/current-wire.js';

/** Wire keys that give a location (schema/location.ts): one of them in a list element replaces `location`. */
const LOCATION_KEYS = new Set(['location', 'lat', 'lng', 'lon', 'latitude', 'longitude']);

/** A list element completed from the stored report: its text, and the field names involved. */
export interface PatchedElement {
  text: string;
  /** Fields the element left out, kept from the stored report. */
  kept: string[];
  /** Unknown fields of the element the stored report lacks, left out (full exports bring fields). */
  ignored: string[];
}

/**
 * A list element of a report the warehouse holds, completed from that report where the list leaves fields
 * out, or `undefined` when it carries every field the report has. The list's fields are not shown upstream
 * (docs/upstream-contract.md: "Response body fields of every endpoint: not shown"); a list of summaries
 * read as whole reports would blank what it omits and make a version each run, which the next full export
 * takes back. So a `recent` run changes only the fields the list gives:
 * - a stored field the element lacks is kept (a modelled `null` one needs no keeping, as absent reads as `null`;
 *   nor does a stored `updatedAt` equal to the `createdAt` both give, the value it falls back to);
 * - any location key of the element replaces the stored `location`;
 * - an unknown field the stored report lacks is left out: full exports decide which fields a report has
 *   (else it would come with each `recent` run and go with each full one).
 * A report last written by a CSV run keeps only its modelled fields: its unknown fields are a CSV reading
 * (all text, an absent field read as `null`), which the element's JSON reading refines as a full JSON
 * export would.
 *
 * @param element the element's JSON text as sent (a valid report: validation already passed)
 * @param stored the stored report (warehouse/current-wire.ts)
 */
export function patchElement(element: string, stored: StoredWire): PatchedElement | undefined {
  const given = fieldTexts(element);
  const have = fieldTexts(stored.text);
  if (stored.fromCsv) for (const key of have.keys()) if (!isModelledKey(key)) have.delete(key);
  const relocated = [...given.keys()].some((k) => LOCATION_KEYS.has(k));
  const kept = [...have].flatMap(([key, text]) => {
    if (given.has(key) || (key === 'location' && relocated)) return [];
    // Absent reads as `null` for a modelled field; an unknown field's `null` is a key of its own.
    if (text === 'null' && isModelledKey(key)) return [];
    // Absent, `updatedAt` falls back to the element's `createdAt`: the same value when both are the stored one.
    if (key === 'updatedAt' && text === have.get('createdAt') && sameInstant(given.get('createdAt'), text)) {
      return [];
    }
    return [key];
  });
  const ignored = stored.fromCsv ? [] : [...given.keys()].filter((k) => !isModelledKey(k) && !have.has(k));
  if (kept.length === 0 && ignored.length === 0) return undefined;
  // The element's fields in its own order (unknown fields are kept in the order they come), then the kept ones.
  const fields = [...given].filter(([key]) => !ignored.includes(key));
  for (const key of kept) fields.push([key, have.get(key)!]);
  return { text: `{${fields.map(([k, t]) => `${JSON.stringify(k)}:${t}`).join(',')}}`, kept, ignored };
}

/** The top-level fields of a JSON object's text: key → value text, in order. */
function fieldTexts(text: string): Map<string, string> {
  return new Map(scanJsonObject(text).fields.map((f) => [f.key, text.slice(f.start, f.end)]));
}

/** True when the JSON text `given` is a timestamp naming the same instant as the canonical JSON text `stored`. */
function sameInstant(given: string | undefined, stored: string): boolean {
  if (given === undefined) return false;
  if (given === stored) return true;
  const value: unknown = JSON.parse(given);
  return typeof value === 'string' && `"${normalizeTimestamp(value) ?? ''}"` === stored;
}

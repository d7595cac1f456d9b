import { scanJsonObject } from '../../schema/json-text.js';
import { normalizeTimestamp } from '../../schema/timestamp.js';
import { isModelledKey } from '../../schema/wire-format.js';
import type { StoredWire } from '../../warehouse/current-wire.js';

/** Wire keys that give a location (schema/location.ts): one of them in a list element replaces `location`. */
const LOCATION_KEYS = new Set(['location', 'lat', 'lng', 'lon', 'long', 'latitude', 'longitude']);

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
 * - any location key of the element replaces the stored `location`; a `location` object also replaces the
 *   keys of it the stored report keeps as `location.<key>` (schema/location.ts: a Socrata `human_address`);
 * - an unknown field the stored report lacks is left out: full exports decide which fields a report has
 *   (else it would come with each `recent` run and go with each full one);
 * - a completed element has the stored report's fields in their order (the order of unknown fields is
 *   part of the report, and so of its content hash; a summary cannot tell it), fields only the element
 *   has after them; an element that leaves nothing out is taken as it comes, its order too. A report a CSV run wrote takes the
 *   element's order, as a CSV's columns are in its header's order, not the report's.
 * A report last written by a CSV run keeps its unknown fields that have a value (not `null` nor `""`: a CSV
 * cell cannot tell those from an absent field), as that run read them (text); those the element gives, and those it has
 * that the stored report lacks, come from its JSON reading, which refines them as a full JSON export would.
 *
 * @param element the element's JSON text as sent (a valid report: validation already passed)
 * @param stored the stored report (warehouse/current-wire.ts)
 */
export function patchElement(element: string, stored: StoredWire): PatchedElement | undefined {
  const given = fieldTexts(element);
  const have = fieldTexts(stored.text);
  if (stored.fromCsv) {
    // No value in a CSV reading: an empty cell, quoted or not, is also how CSV writes an absent field.
    for (const [key, text] of have)
      if (!isModelledKey(key) && (text === 'null' || text === '""')) have.delete(key);
  }
  const relocated = [...given.keys()].some((k) => LOCATION_KEYS.has(k));
  const kept = [...have].flatMap(([key, text]) => {
    if (given.has(key) || (relocated && key === 'location')) return [];
    // A location object given replaces the stored one's other keys too; bare coordinates do not.
    if (given.has('location') && key.startsWith('location.')) return [];
    // Absent reads as `null` for a modelled field; an unknown field's `null` is a key of its own.
    if (text === 'null' && isModelledKey(key)) return [];
    // Absent, `updatedAt` falls back to the element's `createdAt`: the same value when both are the stored one.
    if (key === 'updatedAt' && text === have.get('createdAt') && sameInstant(given.get('createdAt'), text)) {
      return [];
    }
    return [key];
  });
  const ignored = stored.fromCsv ? [] : [...given.keys()].filter((k) => !isModelledKey(k) && !have.has(k));
  // A whole element is the report as the list gives it, its order too (the upstream may reorder fields).
  if (kept.length === 0 && ignored.length === 0) return undefined;
  const fields: Array<[string, string]> = [];
  // A CSV run's order is its header's, not the report's: then the element's order leads.
  const order = stored.fromCsv ? new Map([...given, ...have]) : have;
  for (const key of order.keys()) {
    const value = given.get(key) ?? (kept.includes(key) ? have.get(key) : undefined);
    if (value !== undefined) fields.push([key, value]);
  }
  for (const [key, text] of given) if (!order.has(key) && !ignored.includes(key)) fields.push([key, text]);
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

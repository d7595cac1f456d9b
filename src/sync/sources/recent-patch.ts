import { scanJsonObject } from '../../schema/json-text.js';
import { isModelledKey } from '../../schema/wire-format.js';

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
 *
 * @param element the element's JSON text as sent (a valid report: validation already passed)
 * @param stored the stored report's canonical wire JSON (warehouse/current-wire.ts)
 */
export function patchElement(element: string, stored: string): PatchedElement | undefined {
  const given = fieldTexts(element);
  const have = fieldTexts(stored);
  const relocated = [...given.keys()].some((k) => LOCATION_KEYS.has(k));
  const kept = [...have].flatMap(([key, text]) => {
    if (given.has(key) || (key === 'location' && relocated)) return [];
    // Absent reads as `null` for a modelled field; an unknown field's `null` is a key of its own.
    if (text === 'null' && isModelledKey(key)) return [];
    // Absent, `updatedAt` falls back to the element's `createdAt`: the same value when both are the stored one.
    if (key === 'updatedAt' && text === have.get('createdAt') && given.get('createdAt') === text) return [];
    return [key];
  });
  const ignored = [...given.keys()].filter((k) => !isModelledKey(k) && !have.has(k));
  if (kept.length === 0 && ignored.length === 0) return undefined;
  const fields: string[] = [];
  for (const [key, text] of have) {
    if (key === 'location' && relocated && !given.has(key)) continue;
    fields.push(`${JSON.stringify(key)}:${given.get(key) ?? text}`);
  }
  for (const [key, text] of given) {
    if (!have.has(key) && isModelledKey(key)) fields.push(`${JSON.stringify(key)}:${text}`);
  }
  return { text: `{${fields.join(',')}}`, kept, ignored };
}

/** The top-level fields of a JSON object's text: key → value text, in order. */
function fieldTexts(text: string): Map<string, string> {
  return new Map(scanJsonObject(text).fields.map((f) => [f.key, text.slice(f.start, f.end)]));
}

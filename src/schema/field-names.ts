import type { JsonObjectScan } from './json-text.js';
import { upstreamReading } from './upstream-reading.js';
import { MODELLED_KEYS } from './wire-format.js';

// A column name as people style it: case, spaces, `_` and `-` aside (`ID`, `Created At`, `created_at`).
// Only ASCII white space: a U+FEFF (a second byte order mark) starting a name is data, kept as sent.
const fold = (name: string) => name.toLowerCase().replace(/[ \t_-]+/g, '');
const BY_FOLD = new Map([...MODELLED_KEYS].map((key) => [fold(key), key]));

/**
 * The names of a CSV header or of a JSON record's top-level keys, with each that names a modelled field in
 * another style (`ID`, `Status`, `CREATED_AT`, `Updated At`, `created_at`, ` id` padded) renamed to the
 * field's wire name. The seed shows no field names but `destination` and `status`
 * (docs/upstream-contract.md): a spreadsheet-styled header, or snake_case JSON, is the same export. A name is
 * renamed only when there is no name of that exact field and no other name folds to it (two candidates stay
 * as they are: their values go to `extra`, never one chosen silently); a name given twice is renamed at
 * both places, as a repeated wire name stays repeated. Every other name is kept as sent.
 * A name `REPORTS_FIELD_NAMES` maps (`service_request_id` → `id`: schema/upstream-reading.ts) is renamed
 * by the same rules.
 */
export function canonicalNames(names: readonly string[]): string[] {
  const exact = new Set(names);
  const candidates = names.map((name) => {
    if (MODELLED_KEYS.has(name)) return undefined;
    const key = fieldOf(name);
    return key !== undefined && !exact.has(key) ? key : undefined;
  });
  // Distinct names per field: one name given twice (`ID,…,ID`) is one column repeated, as `id,…,id` is
  // (its cells must then agree), not two candidates.
  const named = new Map<string, Set<string>>();
  candidates.forEach((key, i) => {
    if (key !== undefined) named.set(key, (named.get(key) ?? new Set()).add(names[i]!));
  });
  return names.map((name, i) => {
    const key = candidates[i];
    return key !== undefined && named.get(key)!.size === 1 ? key : name;
  });
}

/**
 * The text of a JSON object (one NDJSON line, one list element) with its top-level keys in another style
 * renamed by {@link canonicalNames}, each value's text kept as sent; undefined when no key is renamed, and
 * when the object repeats a key: the scan stops there, so a copy would drop that key's second value and
 * every field after it (the caller's check for repeated keys then quarantines the object as sent).
 *
 * @param scan the object's scan (json-text.ts `scanJsonObject`): top-level fields with their value offsets
 *   in `text`, and the first repeated key
 */
export function restyledObjectText(text: string, scan: JsonObjectScan): string | undefined {
  if (scan.duplicate !== undefined) return undefined;
  const fields = scan.fields;
  const names = canonicalNames(fields.map((f) => f.key));
  if (names.every((name, i) => name === fields[i]!.key)) return undefined;
  return `{${fields.map((f, i) => `${JSON.stringify(names[i])}:${text.slice(f.start, f.end)}`).join(',')}}`;
}

/**
 * Whether a key not modelled as it is names a modelled field in another style (cheap pre-check, run for
 * every unknown key of every line: answers are remembered per rule set, up to 4,096 names).
 */
export function isRestyledName(key: string): boolean {
  if (MODELLED_KEYS.has(key)) return false;
  const reading = upstreamReading().fieldNames;
  if (reading !== remembered.reading) remembered = { reading, answers: new Map() };
  let answer = remembered.answers.get(key);
  if (answer === undefined) {
    answer = fieldOf(key) !== undefined;
    if (remembered.answers.size < 4096) remembered.answers.set(key, answer);
  }
  return answer;
}

let remembered: { reading: object; answers: Map<string, boolean> } = { reading: {}, answers: new Map() };

/** The modelled field `name` is mapped to (`REPORTS_FIELD_NAMES`), or names in another style; else undefined. */
function fieldOf(name: string): string | undefined {
  const mapped = upstreamReading().fieldNames;
  return Object.hasOwn(mapped, name) ? mapped[name] : BY_FOLD.get(fold(name));
}

/**
 * The modelled fields that several names fold to while none is the exact name (`Status` and `STATUS`, no
 * `status`): {@link canonicalNames} renames none of them, so the field reads as missing. For an error
 * that names them.
 */
export function ambiguousNames(names: readonly string[]): { field: string; names: string[] }[] {
  const exact = new Set(names);
  const byField = new Map<string, string[]>();
  for (const name of names) {
    if (MODELLED_KEYS.has(name)) continue;
    const field = fieldOf(name);
    if (field === undefined || exact.has(field)) continue;
    const given = byField.get(field) ?? [];
    if (!given.includes(name)) byField.set(field, [...given, name]);
  }
  return [...byField].filter(([, n]) => n.length > 1).map(([field, n]) => ({ field, names: n }));
}

/**
 * JSON text of `value` that DuckDB's `JSON` type accepts: `JSON.stringify`'s, with every lone UTF-16
 * surrogate in a string or key written as the six characters of its escape (`\ud800` as text, not as an
 * escape). `JSON.stringify` writes a lone surrogate as the escape `\ud800`, which names no character, and
 * DuckDB refuses the whole text ("no low surrogate"): an error naming a key from the upstream could then not
 * be recorded at all.
 *
 * @example storableJson({ message: 'key "\ud800"' }) // '{"message":"key \"\\ud800\""}'
 */
export function storableJson(value: unknown): string {
  return JSON.stringify(value).replace(LONE_ESCAPE, (_, backslashes: string, hex: string) => {
    // An odd run of backslashes before `u` makes it an escape; an even run is literal backslashes.
    return backslashes.length % 2 === 1 ? `${backslashes}\\u${hex}` : `${backslashes}u${hex}`;
  });
}

// Only lone surrogates are escaped by JSON.stringify: a well-formed pair is written as its characters.
const LONE_ESCAPE = /(\\+)u(d[89a-f][0-9a-f]{2})/g;

import JsonlParser from 'stream-json/jsonl/Parser.js';

/**
 * The parse step of stream-json's JSONL parser: `JsonlParser.checkedParse(input, reviver, errorIndicator)`,
 * a public static of the class in stream-json 1.9 (`jsonl/Parser.js`, the function behind its documented
 * `errorIndicator` option: `JSON.parse`, with a bad line turned into the indicator's value instead of an
 * exception). @types/stream-json does not declare it (and an `export =` class cannot be augmented), so
 * its type is stated here, once;
 * test/unit/json-line.test.ts pins what it does, so an upgrade that changes it fails the build's tests.
 * We use the step, not the stream: its stream counts only non-empty lines (we need physical line numbers),
 * has no line-length bound and cannot tell a cut last line from a bad one (extract/ndjson.ts splits lines).
 */
interface JsonlParseStep {
  checkedParse(input: string, reviver: undefined, errorIndicator: (error: Error) => unknown): unknown;
}

// The class as its published code is: the one place its missing declaration is stated.
const jsonl: typeof JsonlParser & JsonlParseStep = JsonlParser as typeof JsonlParser & JsonlParseStep;
const MALFORMED = Symbol('malformed');
let lastParseError = '';
const indicator = (error: Error) => {
  lastParseError = error.message;
  return MALFORMED;
};

/**
 * Parses one NDJSON line (without its line break): the value, or the parser's error message (which
 * the quarantine keeps as the reason). Never throws.
 */
export function parseJsonLine(text: string): { value: unknown } | { error: string } {
  const value = jsonl.checkedParse(text, undefined, indicator);
  return value === MALFORMED ? { error: lastParseError } : { value };
}

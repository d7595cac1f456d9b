import { createRequire } from 'node:module';
import { TextDecoder } from 'node:util';

/** The binding's shared string accessors (CommonJS; `getString` reads `exports.textDecoder` at each call). */
interface DataAccessors {
  textDecoder: TextDecoder;
  getString?: unknown;
}

const ACCESSORS = '@duckdb/node-api/lib/vectors/dataAccessors.js';

/**
 * Makes `@duckdb/node-api` return text that starts with U+FEFF unchanged. The binding decodes every
 * VARCHAR (JSON, and strings inside LIST, STRUCT, MAP, UNION and VARIANT values too) with one shared
 * `new TextDecoder()`, whose WHATWG default `ignoreBOM: false` drops a leading U+FEFF as if it were a byte
 * order mark: `SELECT chr(65279) || 'x'` reads back as `"x"` through every read method (`getRows`,
 * `getRowsJS`, `getRowObjectsJson`, chunks, vectors). Replacing that decoder with one that keeps the
 * character fixes every read path at once and costs nothing per value (docs/known-issues.md).
 *
 * Idempotent; called when the module that opens the warehouse is loaded. Returns `false` (and changes
 * nothing) when the binding no longer has that decoder, i.e. after an upgrade that moved or fixed it; the
 * round-trip test in test/warehouse/leading-feff.test.ts then tells whether the workaround is still needed.
 */
export function keepLeadingFeff(): boolean {
  let accessors: DataAccessors;
  try {
    accessors = createRequire(import.meta.url)(ACCESSORS) as DataAccessors;
  } catch {
    return false;
  }
  if (!(accessors.textDecoder instanceof TextDecoder) || typeof accessors.getString !== 'function')
    return false;
  if (!accessors.textDecoder.ignoreBOM) {
    accessors.textDecoder = new TextDecoder('utf-8', { ignoreBOM: true });
  }
  return true;
}

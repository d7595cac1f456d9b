import { createRequire } from 'node:module';
import type * as DuckDBApi from '@duckdb/node-api';

/**
 * The values of `@duckdb/node-api` (types are imported from it directly), loaded with `require`. The package
 * is CommonJS re-exporting ~100 files: imported as an ES module, Node first scans every one of them for its
 * export names (cjs-module-lexer), and loading it took ~160–220 ms instead of ~100 ms, at the start of
 * every command that opens the warehouse.
 */
export const duckdbApi = createRequire(import.meta.url)('@duckdb/node-api') as typeof DuckDBApi;

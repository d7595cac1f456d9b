import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: string | undefined;

/**
 * The folder of reports-sync's own package.json, found by walking up from this file: the same answer
 * from `src/` (tests) and from `dist/src/` (the built CLI, the Docker image).
 */
export function packageRoot(): string {
  if (cached) return cached;
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('reports-sync: package.json not found above ' + import.meta.url);
    dir = parent;
  }
  cached = dir;
  return dir;
}

/** The bundled real sample dataset (`data/sample/reports.ndjson`, see its SOURCE.md). */
export function sampleDatasetPath(): string {
  return join(packageRoot(), 'data', 'sample', 'reports.ndjson');
}

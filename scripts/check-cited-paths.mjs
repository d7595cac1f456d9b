// Fails when a file under src/ names a repository path that does not exist: `docs/…`, `src/…`, `test/…`,
// `bench/…`, `scripts/…` or `deploy/…` with an extension, and module paths such as `sync/merge.ts`
// (read under src/). A stale pointer sends the next reader to nothing (run by `npm run lint`). Documents that
// are not in the repository (the design notes and the upstream's own description, which the team read
// outside it) are not cited either: what the code follows is in docs/.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const EXT = '(?:md|ts|mjs|cjs|js|yml|yaml|sql|json)';
const REPO_PATH = new RegExp(`\\b(?:docs|src|test|bench|scripts|deploy)/[\\w./-]+?\\.${EXT}\\b`, 'g');
const srcDirs = readdirSync(join(root, 'src'), { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name);
// A module path: a src/ folder name at a word start (not after another path segment), then a file.
// Names of documents outside the repository.
const OUTSIDE = /\b(?:DESIGN\.md|STYLE\.md)\b|\bseed(?: rule|'s| says)\b|\bthe seed\b/g;
const MODULE_PATH = new RegExp(`(?<![\\w./-])(?:${srcDirs.join('|')})/[\\w-]+\\.(?:ts|sql)\\b`, 'g');

/** Every file under `dir` (recursively), as paths relative to the repository. */
function filesUnder(dir) {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? filesUnder(path) : [path];
  });
}

const missing = [];
for (const file of filesUnder('src')) {
  const lines = readFileSync(join(root, file), 'utf8').split('\n');
  lines.forEach((line, i) => {
    for (const [path] of line.matchAll(REPO_PATH)) {
      if (!existsSync(join(root, path))) missing.push(`${file}:${i + 1}: ${path}`);
    }
    for (const [name] of line.matchAll(OUTSIDE)) {
      missing.push(`${file}:${i + 1}: ${name} (not in the repository: cite docs/)`);
    }
    for (const [path] of line.matchAll(MODULE_PATH)) {
      // Only a path that exists neither under src/ nor beside the file itself.
      if (!existsSync(join(root, 'src', path)) && !existsSync(join(root, dirname(file), path))) {
        missing.push(`${file}:${i + 1}: ${path} (under src/)`);
      }
    }
  });
}
if (missing.length > 0) {
  console.error(`Paths named in src/ that do not exist (${missing.length}):\n${missing.join('\n')}`);
  process.exit(1);
}
console.log(`cited paths: every path named in ${relative(root, join(root, 'src'))}/ exists`);

// Fails when a function in src/sync, src/normalize or src/warehouse is longer than 60 lines (its body,
// from the opening to the closing brace, nested functions included): such a function is split into named
// steps (docs/development.md). Uses the TypeScript compiler's parser (run by `npm run lint`).
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const FOLDERS = ['src/sync', 'src/normalize', 'src/warehouse'];
const MAX_LINES = 60;
// Functions over the limit that another change is splitting, as `file: function`. Each entry is a debt
// with an owner; the check fails once an entry is no longer needed, so the list only shrinks.
const ALLOWED = new Set([]);

/** Every .ts file under `dir` (recursively), as paths relative to the repository. */
function filesUnder(dir) {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return filesUnder(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** The name a reader finds a function by: its own, its variable's or property's, else `(anonymous)`. */
function nameOf(node) {
  if (node.name) return node.name.getText();
  const parent = node.parent;
  if (parent && (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent))) {
    return parent.name.getText();
  }
  return '(anonymous)';
}

const tooLong = [];
const seen = new Set();
for (const file of FOLDERS.flatMap(filesUnder)) {
  const text = readFileSync(join(root, file), 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const lineOf = (pos) => source.getLineAndCharacterOfPosition(pos).line + 1;
  const visit = (node) => {
    if (ts.isFunctionLike(node) && node.body && ts.isBlock(node.body)) {
      const first = lineOf(node.body.getStart(source));
      const lines = lineOf(node.body.getEnd()) - first + 1;
      const key = `${file}: ${nameOf(node)}`;
      if (lines > MAX_LINES) {
        seen.add(key);
        if (!ALLOWED.has(key)) tooLong.push(`${file}:${first}: ${nameOf(node)} has ${lines} lines`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
}
const stale = [...ALLOWED].filter((key) => !seen.has(key));
if (stale.length > 0) {
  console.error(
    `Allowed long functions that are no longer long: remove them from ALLOWED\n${stale.join('\n')}`,
  );
}
if (tooLong.length > 0) {
  console.error(
    `Functions over ${MAX_LINES} lines in ${FOLDERS.join(', ')} (${tooLong.length}): split each into named steps\n` +
      tooLong.join('\n'),
  );
}
if (stale.length > 0 || tooLong.length > 0) process.exit(1);
console.log(`function length: every function in ${FOLDERS.join(', ')} is at most ${MAX_LINES} lines`);

import { basename, isAbsolute, relative } from 'node:path';

/**
 * How the user can run this CLI again, for hints printed after a command: `reports-sync` when it was
 * started through its bin link (an install, `npm link`), else `node <path of main.js>` (relative to the
 * working folder when below it): a clone run by `npm start` has no `reports-sync` on its PATH, and
 * `npx reports-sync` in a clone copies it and builds it again first (seconds, with no output).
 */
export function selfCommand(argv: readonly string[] = process.argv, cwd: string = process.cwd()): string {
  const script = argv[1];
  if (script === undefined || basename(script) === 'reports-sync') return 'reports-sync';
  const rel = relative(cwd, script);
  const shown = rel !== '' && !rel.startsWith('..') && !isAbsolute(rel) ? rel : script;
  return `node ${/\s/.test(shown) ? JSON.stringify(shown) : shown}`;
}

// Copies non-TypeScript assets (SQL migrations) next to the compiled code so `dist/` runs on its own.
import { chmodSync, cpSync, mkdirSync } from 'node:fs';

mkdirSync('dist/src/warehouse/migrations', { recursive: true });
cpSync('src/warehouse/migrations', 'dist/src/warehouse/migrations', { recursive: true });
mkdirSync('dist/src/warehouse/postgres/migrations', { recursive: true });
cpSync('src/warehouse/postgres/migrations', 'dist/src/warehouse/postgres/migrations', { recursive: true });

// The `bin` entry must be executable: npm only sets the mode on install, before `prepare` has built it,
// so `npx reports-sync` from a fresh clone would otherwise fail with "Permission denied".
chmodSync('dist/src/cli/main.js', 0o755);

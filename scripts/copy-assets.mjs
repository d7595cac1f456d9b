// Copies non-TypeScript assets (SQL migrations) next to the compiled code so `dist/` runs on its own.
import { cpSync, mkdirSync } from 'node:fs';

mkdirSync('dist/src/warehouse/migrations', { recursive: true });
cpSync('src/warehouse/migrations', 'dist/src/warehouse/migrations', { recursive: true });

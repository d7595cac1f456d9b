// Rewrites the settings table of docs/configuration.md from the settings (`npm run docs:config`);
// test/unit/config.test.ts fails when the committed table is stale.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { settingsMarkdown } from '../dist/src/config/config.js';

const path = fileURLToPath(new URL('../docs/configuration.md', import.meta.url));
const lines = readFileSync(path, 'utf8').split('\n');
const start = lines.findIndex((l) => l.startsWith('| variable |'));
if (start < 0) throw new Error(`no settings table ("| variable |") in ${path}`);
let end = start;
while (end < lines.length && lines[end].startsWith('|')) end++;
const table = settingsMarkdown().trimEnd().split('\n');
lines.splice(start, end - start, ...table);
writeFileSync(path, lines.join('\n'));
console.log(`docs/configuration.md: ${table.length - 2} settings`);

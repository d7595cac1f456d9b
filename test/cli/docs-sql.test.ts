import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/util/package-root.js';
import { runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/sync.js';

/** The SQL of every ```sql block of a Markdown file. */
function sqlBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1]!.trim());
}

/** The query of every `reports-sync sql [--format F] "…"` command of a Markdown file's shell blocks. */
function sqlCommands(markdown: string): string[] {
  return [...markdown.matchAll(/reports-sync sql (?:--format \w+ )?"([^"]+)"/g)].map((m) => m[1]!);
}

const doc = (name: string) => readFileSync(join(packageRoot(), name), 'utf8');

// The examples a newcomer copies first: each must run on the warehouse `npm start` leaves, and show rows.
const EXAMPLES: { where: string; sql: string }[] = [
  ...sqlBlocks(doc('README.md')).map((sql) => ({ where: 'README.md', sql })),
  ...sqlBlocks(doc('docs/how-a-sync-works.md')).map((sql) => ({ where: 'docs/how-a-sync-works.md', sql })),
  ...sqlCommands(doc('docs/dashboards.md')).map((sql) => ({ where: 'docs/dashboards.md', sql })),
];

describe('the SQL examples of the docs, on the demo warehouse', () => {
  const tmp = tempDir();
  const warehouse = join(tmp.dir, 'warehouse.duckdb');
  beforeAll(async () => {
    // What `npm start` does: the bundled sample from the simulator, synced into a fresh warehouse.
    const demo = await runCli(['demo'], { REPORTS_WAREHOUSE: warehouse }, 120_000);
    expect(demo.code, demo.stderr).toBe(0);
    // Counts as people read them, as the progress line shows them; hints that run in a clone.
    expect(demo.stdout).toMatch(/records: 6,411 read, 6,405 loaded, 6 rejected/);
    expect(demo.stdout).toMatch(/^Query it: +node \S*main\.js sql "/m);
    expect(demo.stdout).not.toContain('npx');
  }, 150_000);
  afterAll(() => tmp.cleanup());

  it('finds the README examples', () => {
    expect(EXAMPLES.filter((e) => e.where === 'README.md').length).toBeGreaterThanOrEqual(1);
    expect(EXAMPLES.length).toBeGreaterThanOrEqual(5);
  });

  it.each(EXAMPLES.map((e, i) => [`${e.where} #${i + 1}`, e.sql] as const))(
    '%s runs without error and every statement returns rows',
    async (_where, sql) => {
      const r = await runCli(['sql', sql], { REPORTS_WAREHOUSE: warehouse });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toBe('');
      // `sql` prints one table per statement; an empty result is "(no rows)".
      expect(r.stdout).not.toContain('(no rows)');
      expect(r.stdout.trim()).not.toBe('');
    },
  );
});

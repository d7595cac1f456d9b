import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openWarehouse, tempDirectoryFor } from '../../src/warehouse/database.js';
import { runCli } from '../helpers/cli.js';
import { spawnCli } from '../helpers/cli-process.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { tempDir } from '../helpers/sync.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

describe("DuckDB's spill folder beside the warehouse", () => {
  it('is <warehouse>.tmp, where a killed process left files that the next process removes once it holds the file', async () => {
    const path = join(tmp.dir, 'w.duckdb');
    const spill = tempDirectoryFor(path);
    expect(spill).toBe(`${path}.tmp`);
    const w = await openWarehouse(path);
    const c = await w.connect();
    expect(
      String(
        (await c.runAndReadAll(`SELECT current_setting('temp_directory') AS d`)).getRowObjectsJS()[0]?.d,
      ),
    ).toBe(spill);
    c.closeSync();
    w.close();

    // What a SIGKILL mid-merge leaves behind.
    mkdirSync(spill, { recursive: true });
    writeFileSync(join(spill, 'duckdb_temp_storage_S32K-0.tmp'), Buffer.alloc(1 << 20));
    const again = await openWarehouse(path);
    expect(readdirSync(spill)).toEqual([]);
    again.close();
    expect(existsSync(join(spill, 'duckdb_temp_storage_S32K-0.tmp'))).toBe(false);
  });

  it('is left alone by a process that finds the warehouse locked', async () => {
    const sim = await startTestSimulator({ generate: { n: 200, seed: 1 } });
    const path = join(tmp.dir, 'w.duckdb');
    const env = { REPORTS_BASE_URL: sim.url, REPORTS_WAREHOUSE: path, REPORTS_FAILPOINT: 'before-merge' };
    const holder = spawnCli(['sync'], env);
    try {
      await holder.waitFor(/failpoint before-merge reached/);
      const spill = tempDirectoryFor(path);
      mkdirSync(spill, { recursive: true });
      writeFileSync(join(spill, 'in-use.tmp'), 'x');
      const r = await runCli(['sync'], { REPORTS_BASE_URL: sim.url, REPORTS_WAREHOUSE: path });
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/in use/);
      expect(readdirSync(spill)).toEqual(['in-use.tmp']);
    } finally {
      holder.child.kill('SIGKILL');
      await holder.exited;
    }
  });
});

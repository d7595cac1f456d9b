import type { DuckDBConnection } from '@duckdb/node-api';
import type { Config } from '../../src/config/config.js';
import type { Warehouse } from '../../src/warehouse/database.js';
import { startTestSimulator, type TestSimulator } from './simulator.js';
import { openTestWarehouse, syncTargetOnce, testConfig } from './sync.js';

/** Every stored row of `report_rows`, all columns, as sorted text: the table's content, not its order. */
export async function storedContent(c: DuckDBConnection): Promise<string[]> {
  const rows = await c.runAndReadAll(`SELECT to_json(r)::VARCHAR AS j FROM report_rows r ORDER BY j`);
  return rows.getRows().map((row) => String(row[0]));
}

/** Orders `"<created_at epoch µs> <id>"` keys as the reader's sorted rows lie: by time, then id. */
export function byTimeThenId(a: string, b: string): number {
  const [ta, ia] = a.split(' ');
  const [tb, ib] = b.split(' ');
  const d = BigInt(ta!) - BigInt(tb!);
  if (d !== 0n) return d < 0n ? -1 : 1;
  return ia! < ib! ? -1 : ia! > ib! ? 1 : 0;
}

/** What {@link withSyncedWarehouse} hands a test: the simulator, the config, the warehouse and a connection. */
export interface SyncedWarehouse {
  sim: TestSimulator;
  config: Config;
  warehouse: Warehouse;
  c: DuckDBConnection;
}

/**
 * Runs `fn` on a warehouse in `dir` loaded by one NDJSON sync of `n` generated reports (seed `seed`), with a
 * connection to it; closes the connection, the warehouse and the simulator afterwards, also when `fn` throws.
 */
export async function withSyncedWarehouse(
  dir: string,
  generate: { n: number; seed: number },
  fn: (w: SyncedWarehouse) => Promise<void>,
): Promise<void> {
  const sim = await startTestSimulator({ generate });
  const config = testConfig(sim.url, `${dir}/w.duckdb`);
  const warehouse = await openTestWarehouse(config);
  try {
    const [first] = await syncTargetOnce(warehouse, config, 'ndjson');
    if (first?.status !== 'succeeded') throw new Error(`the first sync ${first?.status ?? 'did not run'}`);
    const c = await warehouse.connect();
    try {
      await fn({ sim, config, warehouse, c });
    } finally {
      c.closeSync();
    }
  } finally {
    warehouse.close();
    await sim.close();
  }
}

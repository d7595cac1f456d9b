import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, onTestFinished } from 'vitest';
import { PUBLIC_PREFIX } from '../../src/schema/public-query.js';
import type { Dataset } from '../../src/simulator/dataset.js';
import type { FaultSpec } from '../../src/simulator/faults.js';
import { generateDataset } from '../../src/simulator/generate.js';
import { loadDataset } from '../../src/simulator/load-dataset.js';
import { startSimulator, type SimulatorHandle } from '../../src/simulator/server.js';

/** Folder of the simulator's NDJSON fixtures (`small.ndjson`: 10 valid reports and 4 warts, CRLF, umlauts). */
export const SIMULATOR_FIXTURES = join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  'fixtures',
  'simulator',
);

/** Path of a fixture file under {@link SIMULATOR_FIXTURES}. */
export function fixturePath(name: string): string {
  return join(SIMULATOR_FIXTURES, name);
}

/** What to serve: a fixture file name, a generated dataset, or a dataset built by the test. */
export interface TestSimulatorOptions {
  fixture?: string;
  generate?: { n: number; seed?: number };
  dataset?: Dataset;
  /** Seed of a fixture dataset (advanceDays). */
  seed?: number;
  faults?: ReadonlyArray<FaultSpec | string>;
}

/** A started simulator plus `api(path)`: the absolute URL of a public path (`api('/reports?page=2')`). */
export type TestSimulator = SimulatorHandle & { api(path: string): string };

/** Builds the dataset of {@link TestSimulatorOptions} (default: fixture `small.ndjson`). */
export async function testDataset(options: TestSimulatorOptions = {}): Promise<Dataset> {
  if (options.dataset) return options.dataset;
  if (options.generate) return generateDataset(options.generate.n, options.generate.seed ?? 1);
  return loadDataset(fixturePath(options.fixture ?? 'small.ndjson'), { seed: options.seed ?? 1 });
}

/** Starts a simulator on 127.0.0.1, port 0. Inside a test it is closed when the test finishes. */
export async function startTestSimulator(options: TestSimulatorOptions = {}): Promise<TestSimulator> {
  const sim = await startSimulator({ dataset: await testDataset(options), faults: options.faults ?? [] });
  try {
    onTestFinished(() => sim.close());
  } catch {
    // Called outside a test (beforeAll): the caller closes it.
  }
  return withApi(sim);
}

/**
 * One simulator for a whole `describe` block: started in `beforeAll`, closed in `afterAll`. Returns a getter.
 *
 * @example
 * const sim = simulatorForSuite({ fixture: 'small.ndjson' });
 * it('lists', async () => expect((await fetch(sim().api('/reports'))).status).toBe(200));
 */
export function simulatorForSuite(options: TestSimulatorOptions = {}): () => TestSimulator {
  let sim: TestSimulator | undefined;
  beforeAll(async () => {
    sim = withApi(
      await startSimulator({ dataset: await testDataset(options), faults: options.faults ?? [] }),
    );
  });
  afterAll(async () => {
    await sim?.close();
  });
  return () => {
    if (!sim) throw new Error('simulatorForSuite: the simulator is not started (use it inside tests)');
    return sim;
  };
}

function withApi(sim: SimulatorHandle): TestSimulator {
  return Object.assign(sim, { api: (path: string) => `${sim.url}${PUBLIC_PREFIX}${path}` });
}

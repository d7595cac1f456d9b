import { loadDataset } from '../../src/simulator/load-dataset.js';
import { startSimulator } from '../../src/simulator/server.js';
import { sampleDatasetPath } from '../../src/util/package-root.js';
import { startSyncedReader } from '../helpers/reader.js';

/** A running server that plays the public API: its base URL (no trailing slash) and how to stop it. */
export interface RunningApi {
  baseUrl: string;
  close(): Promise<void>;
}

/** A server the contract suite runs against, by name, and its `baseUrl` factory. */
export interface ApiTarget {
  name: 'simulator' | 'reader';
  start(): Promise<RunningApi>;
}

/**
 * The two implementations of the public API, both over the real sample (`data/sample/reports.ndjson`):
 * the simulator serving it, and the reader serving a warehouse synced from that simulator with the NDJSON
 * runner. One set of contract assertions runs against each (STYLE.md example 9).
 */
export const API_TARGETS: ApiTarget[] = [
  {
    name: 'simulator',
    async start() {
      const sim = await startSimulator({ dataset: await loadDataset(sampleDatasetPath()) });
      return { baseUrl: sim.url, close: () => sim.close() };
    },
  },
  {
    name: 'reader',
    async start() {
      const synced = await startSyncedReader({ dataset: await loadDataset(sampleDatasetPath()) });
      return { baseUrl: synced.reader.url, close: () => synced.close() };
    },
  },
];

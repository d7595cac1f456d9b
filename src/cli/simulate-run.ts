import { onTermSignals } from './stop-signal.js';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { generateDataset, GENERATED_MAX } from '../simulator/generate.js';
import { loadDataset } from '../simulator/load-dataset.js';
import { parseFaultSpec } from '../simulator/parse-fault-spec.js';
import { startSimulator, type SimulatorHandle } from '../simulator/server.js';
import type { Dataset } from '../simulator/dataset.js';
import type { FaultSpec } from '../simulator/faults.js';
import { SyncError } from '../util/errors.js';
import { createLogger } from '../util/logger.js';
import { sampleDatasetPath } from '../util/package-root.js';

/** The flags of `reports-sync simulate` as commander parses them. */
export interface SimulateOptions {
  port: string;
  host: string;
  dataset?: string;
  generate?: string;
  seed: string;
  advanceDays: string;
  fault?: string[];
  logLevel: string;
  cacheExports?: boolean;
}

/**
 * Runs `reports-sync simulate` until SIGINT/SIGTERM (see registerSimulate).
 * @throws SyncError exit 2 for bad option values, a missing dataset or a port that cannot be bound
 */
export async function runSimulate(opts: SimulateOptions, logLevels: readonly string[]): Promise<void> {
  const port = integerOption('--port', opts.port, 0, 65_535);
  const seed = integerOption('--seed', opts.seed, 0, 2 ** 32 - 1);
  const days = integerOption('--advance-days', opts.advanceDays, 0, 3650);
  if (!logLevels.includes(opts.logLevel)) {
    throw usage(`--log-level must be one of ${logLevels.join(', ')} (got ${JSON.stringify(opts.logLevel)})`);
  }
  if (opts.dataset !== undefined && opts.generate !== undefined) {
    throw usage('--dataset and --generate exclude each other: serve a file or a generated dataset');
  }
  const faults: FaultSpec[] = (opts.fault ?? []).map(parseFaultSpec);
  const logger = createLogger(opts.logLevel);

  let dataset: Dataset;
  if (opts.generate !== undefined) {
    dataset = generateDataset(integerOption('--generate', opts.generate, 0, GENERATED_MAX), seed);
  } else {
    // The package root is found from this module's URL (src/cli or dist/src/cli): see util/package-root.ts.
    const path = opts.dataset === undefined ? sampleDatasetPath() : resolve(opts.dataset);
    if (!existsSync(path)) {
      throw new SyncError(
        'DATASET_NOT_FOUND',
        `Dataset file not found: ${path}. Pass --dataset PATH, or --generate N for a synthetic dataset` +
          (opts.dataset === undefined ? ' (npm run sample:build builds the sample).' : '.'),
        { context: { path } },
      );
    }
    dataset = await loadDataset(path, { seed });
  }
  if (days > 0) dataset.advanceDays(days);

  const exportCacheDir = opts.cacheExports ? mkdtempSync(join(tmpdir(), 'reports-sync-exports-')) : undefined;
  const sim: SimulatorHandle = await startSimulator({
    dataset,
    port,
    host: opts.host,
    faults,
    logger,
    ...(exportCacheDir ? { exportCacheDir } : {}),
  });
  process.stdout.write(`listening on ${sim.url}\n`);
  await new Promise<void>((done) => {
    const unsubscribe = onTermSignals((signal) => {
      unsubscribe();
      logger.info({ signal }, 'simulator stopping');
      void sim.close().then(() => {
        if (exportCacheDir) rmSync(exportCacheDir, { recursive: true, force: true });
        done();
      });
    });
  });
  logger.flush?.();
}

function integerOption(name: string, text: string, min: number, max: number): number {
  if (!/^\d{1,12}$/.test(text) || Number(text) < min || Number(text) > max) {
    throw usage(`${name} must be an integer from ${min} to ${max} (got ${JSON.stringify(text)})`);
  }
  return Number(text);
}

function usage(message: string): SyncError {
  return new SyncError('CLI_INVALID_OPTION', message);
}

import type { Command } from 'commander';
import type { SimulateOptions } from './simulate-run.js';

/** The sample dataset served when neither `--dataset` nor `--generate` is given, relative to the package root. */
export const DEFAULT_DATASET = 'data/sample/reports.ndjson';

/** Upper bound of `--generate` (the simulator's GENERATED_MAX, repeated so `--help` loads no simulator code). */
const GENERATED_MAX = 100_000_000;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const FAULT_HELP = `
Fault switches (--fault, repeatable): <endpoint>:<kind>[=<value>][,<option>=<value>]...
  endpoint: ndjson | csv | list | geojson | stats | all     option times=N: only the first N requests
  all:latency=200                          wait 200 ms before the headers
  ndjson:stall[=BYTES]                     headers (and BYTES of body), then nothing
  ndjson:status=503,times=2,retryAfter=1   503 (or 429, ...) with Retry-After: 1; retryAfterForm=date for an HTTP date
  ndjson:reset=65536                       TCP reset after 65536 body bytes
  ndjson:cut=10000                         close-delimited body (Connection: close) ended mid-line near 10000 bytes
  csv:chunkedCut=5000                      chunked body closed after 5000 bytes, no terminating chunk
  ndjson:malformed=100  |  ndjson:malformed,at=0+7   a non-JSON line after every 100 records / before records 0 and 7
  csv:csvWart=unclosedQuote,at=3           also strayQuote, raggedRow, bom, mixedNewlines, blankLines (every=K or at=I+J)
  ndjson:giant=8000000,at=2                record 2 gets an 8 MB description
  ndjson:duplicates=5                      every 5th record also as an older or tied version (newer first/last/tie)
  ndjson:redirect=loop | csv:redirect=login | all:redirect=crossOrigin,to=http://127.0.0.1:5001 (or to=5001)
  ndjson:regenerate                        a new export (ETag, order) on every request; Range ignored
  csv:ignorePage                           the page parameter is ignored (page 1 every time)
  csv:noValidators                         no ETag, no Last-Modified (also ndjson, stats)
  csv:capPageSize=50                       at most 50 rows per page whatever pageSize asks
  csv:emptyPage=2+5                        pages 2 and 5 header-only, the data one page further on each

Admin endpoints (for tests): POST /__admin/advance?days=N, GET|POST|DELETE /__admin/faults,
GET|DELETE /__admin/requests. The first line on stdout is "listening on <base URL>".

Examples:
  reports-sync simulate --port 8787
  reports-sync simulate --generate 1000000 --seed 7
  reports-sync simulate --dataset test/fixtures/simulator/small.ndjson --advance-days 3 --fault ndjson:status=503,times=2
`;

/**
 * Registers `reports-sync simulate`: serves the public API from a dataset file or a generated dataset on
 * loopback until SIGINT/SIGTERM (docs/architecture.md). Prints `listening on <base URL>` as the first stdout line;
 * request logs go to stderr (pino).
 *
 * Bad option values end the command with a `SyncError` of exit status 2 (exit-codes.ts):
 * `CLI_INVALID_OPTION`, `FAULT_SPEC_INVALID`, `DATASET_NOT_FOUND`, `SIMULATOR_LISTEN`.
 */
export function registerSimulate(program: Command): void {
  program
    .command('simulate')
    .summary('serve the public reports API from a dataset, with fault switches')
    .description(
      'Serve the public citizen-reports API (/api/v1/public: list, NDJSON and paged CSV exports, GeoJSON, ' +
        'stats) from an NDJSON dataset file or a generated dataset, for the demo, tests and benchmarks. ' +
        'Faults make it misbehave on purpose; simulated days create history (status moves, new and ' +
        'unpublished reports).',
    )
    .option('--port <n>', 'TCP port (0 = a free port)', '0')
    .option('--host <host>', 'interface to bind', '127.0.0.1')
    .option('--dataset <path>', `NDJSON dataset file (default: ${DEFAULT_DATASET} of the package)`)
    .option(
      '--generate <n>',
      `serve n synthetic reports instead of a file (constant memory, up to ${GENERATED_MAX})`,
    )
    .option('--seed <s>', 'integer seed of --generate and of simulated days', '1')
    .option('--advance-days <n>', 'advance the data n simulated days before serving', '0')
    .option('--fault <spec>', 'fault switch, repeatable (syntax below)', (v: string, all?: string[]) => [
      ...(all ?? []),
      v,
    ])
    .option('--log-level <level>', `log level: ${LOG_LEVELS.join(', ')}`, 'info')
    .option(
      '--cache-exports',
      'keep the NDJSON export and each CSV page in a temp folder once served whole without faults, and ' +
        'serve those files while the data state lasts (as static exports would be). The benchmark uses it ' +
        'so it measures the sync, not the simulator generating the export or rendering a page (~60-80 ms ' +
        'per 5,000-row CSV page on a shared 2-core machine); removed on exit',
    )
    .addHelpText('after', FAULT_HELP)
    .action(async (opts: SimulateOptions) => {
      const { runSimulate } = await import('./simulate-run.js');
      await runSimulate(opts, LOG_LEVELS);
    });
}

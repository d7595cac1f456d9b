/** The named points where a test can stop a sync to kill it (see {@link failpoint}). */
export type FailpointName =
  | 'after-batch'
  | 'after-page-batch'
  | 'before-merge'
  | 'merge-slice'
  | 'in-merge'
  | 'merge-logged'
  | 'after-commit'
  | 'sort-slice'
  | 'publish-parquet'
  | 'publish-written'
  | 'publish-renamed'
  | 'postgres-applied';

/**
 * A crash-test hook, off unless the environment variable `REPORTS_FAILPOINT` names this point. When it
 * does, the process writes `failpoint <name> reached` on stderr and then waits forever at that point (the
 * event loop kept alive), so a test can SIGKILL it there and check that the warehouse file holds only
 * committed work; `<name>@<ms>` waits that long instead and goes on (a test sends a signal meanwhile);
 * `<name>:fail` throws there instead (a failure at that point: the transaction around it rolls back).
 * Points: `after-batch` (a staging batch and its checkpoint committed), `after-page-batch` (the same for a
 * paged export: whole pages and the checkpoint naming the next one committed), `before-merge` (every batch
 * committed, the merge not begun), `merge-slice` (the first of several slices of the merge done, inside its
 * transaction), `in-merge` (the final transaction has merged but not committed), `merge-logged` (the final transaction
 * committed to the write-ahead log, its checkpoint not run: sync/close-run.ts), `after-commit` (the run is
 * committed, nothing after it has run yet), `sort-slice` (a slice of the rows a moved serving split left
 * behind rewritten, its transaction not committed: warehouse/recluster.ts), `publish-parquet` (a publish
 * wrote and checkpointed its temp copy, still attached, and no Parquet yet), `publish-written` (a publish wrote its temp copy and Parquet
 * folder, nothing renamed yet), `publish-renamed` (the new copy renamed into place, the Parquet link not
 * swapped yet), `postgres-applied` (a PostgreSQL publish has copied its rows, its transaction not
 * committed).
 *
 * Deliberately not a setting of config/settings.ts: it is no user option and never appears in the README's
 * configuration table. A no-op costing one environment lookup when unset. `prepare` runs first, only when
 * the point is armed (e.g. wait for a background commit so the point means what its name says).
 */
export async function failpoint(name: FailpointName, prepare?: () => Promise<void>): Promise<void> {
  const armed = process.env.REPORTS_FAILPOINT;
  if (armed === `${name}:fail`) throw new Error(`failpoint ${name}: injected failure`);
  if (armed !== name && !armed?.startsWith(`${name}@`)) return;
  await prepare?.();
  process.stderr.write(`failpoint ${name} reached\n`);
  const pauseMs = armed === name ? undefined : Number(armed.slice(name.length + 1));
  await new Promise<void>((resolve) => {
    if (pauseMs === undefined) setInterval(() => undefined, 60_000);
    else setTimeout(resolve, pauseMs);
  });
}

/**
 * A test hook for the staging fallback, off unless `REPORTS_FAILPOINT=stage-refuse`: rewrites the batch file
 * at `path` so that DuckDB refuses every staged row whose id starts with `refuse-` (its `createdAt` becomes
 * text no TIMESTAMPTZ cast accepts), as if the validator had let a value through that the warehouse cannot
 * hold. Lets a test prove the refused rows are bisected out and quarantined while the run goes on. A no-op
 * costing one environment lookup per batch when unset.
 */
export async function failpointRefusal(path: string): Promise<void> {
  if (process.env.REPORTS_FAILPOINT !== 'stage-refuse') return;
  const { readFileSync, writeFileSync } = await import('node:fs');
  const text = readFileSync(path, 'utf8');
  const lines = text
    .split('\n')
    .map((line) =>
      line.includes('"r":{"id":"refuse-') ? line.replace('"createdAt":"', '"createdAt":"refused ') : line,
    );
  writeFileSync(path, lines.join('\n'));
}

import { onTermSignals, SAME_SIGNAL_MS } from './stop-signal.js';
import type { Command } from 'commander';
import type { Daemon } from '../daemon/start-daemon.js';
import { configFromFlags, withCommonOptions, type CommonFlags } from './common-options.js';

/**
 * `reports-sync run`: the long-lived service (docs/deployment.md). One process owns the warehouse and
 * runs the jobs of `jobs/` on their schedules plus the HTTP server; the first stdout line is
 * `listening on <url>`. SIGTERM/SIGINT stop it gracefully (exit 0); a second signal aborts the running
 * sync at once. Exit 2 when the warehouse is held by another process or the port cannot be bound.
 */
export function registerRun(program: Command): void {
  withCommonOptions(
    program
      .command('run')
      .description(
        'Run as a service: the jobs of jobs/ on their cron schedules (one at a time, catch-up at start), a ' +
          'published read-only snapshot after each successful run, and the HTTP server (/healthz, reader)',
      )
      .option('--port <n>', 'TCP port of the HTTP server (env REPORTS_PORT, default 8080; 0 = a free port)')
      .option('--host <host>', 'interface to bind (env REPORTS_HOST, default 127.0.0.1)')
      .option(
        '--postgres <url>',
        "publish each job's changes to this PostgreSQL (env REPORTS_POSTGRES_URL; retried after the next job when down)",
      ),
  )
    .addHelpText(
      'after',
      '\nSchedules (time zone REPORTS_TZ) come from jobs/*.ts; REPORTS_SCHEDULE_<JOB> overrides one\n' +
        '(e.g. REPORTS_SCHEDULE_SYNC_NDJSON="*/30 * * * * *", or off). On SIGTERM a running sync may\n' +
        'finish within REPORTS_SHUTDOWN_GRACE_MS, then it is aborted and recorded as aborted (a run already\n' +
        'merging is never cut: it commits first). The daemon exits 0.',
    )
    .action(async (flags: CommonFlags & { port?: string; host?: string; postgres?: string }) => {
      const { config, logger } = await configFromFlags(flags, {
        port: flags.port,
        host: flags.host,
        postgresUrl: flags.postgres,
      });
      const [{ loadJobs }, { startDaemon }, { errorMessage }] = await Promise.all([
        import('../daemon/load-jobs.js'),
        import('../daemon/start-daemon.js'),
        import('../util/errors.js'),
      ]);
      const jobs = await loadJobs();
      // Signals are caught from here on: one that comes while the daemon starts (its catch-up jobs may
      // already run) stops it as soon as it is up, instead of killing it mid-run.
      let early: NodeJS.Signals | undefined;
      let onSignal = (signal: NodeJS.Signals): void => void (early ??= signal);
      const unsubscribe = onTermSignals((signal) => onSignal(signal));
      let daemon: Daemon;
      try {
        daemon = await startDaemon({ config, logger, jobs });
      } catch (err) {
        unsubscribe();
        throw err;
      }
      const stopped = new Promise<void>((resolve, reject) => {
        let firstSignalAt: number | undefined;
        onSignal = (signal: NodeJS.Signals) => {
          if (firstSignalAt !== undefined) {
            // One Ctrl-C reaches every process of the group (npm and node): only a later signal counts.
            if (Date.now() - firstSignalAt < SAME_SIGNAL_MS) return;
            const effect = daemon.abortNow();
            logger.warn(
              { signal },
              effect === 'committing'
                ? 'second signal: the running job merges, and a merge is never cut; it commits, then the daemon stops'
                : effect === 'aborted'
                  ? 'second signal: aborting the running job now (its run is not merged and is recorded as aborted)'
                  : 'second signal: no job is running; the daemon is stopping',
            );
            return;
          }
          firstSignalAt = Date.now();
          logger.info({ signal }, 'signal received: stopping');
          // The handlers stay until the process ends: a late signal is a second one (no job runs any more),
          // never the default that kills the process after it stopped cleanly.
          daemon.stop(signal).then(
            () => resolve(),
            (err: unknown) => reject(err instanceof Error ? err : new Error(errorMessage(err))),
          );
        };
      });
      process.stdout.write(`listening on ${daemon.url}\n`);
      if (early) onSignal(early);
      await stopped;
      logger.flush?.();
    });
}

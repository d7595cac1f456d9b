import type { Command } from 'commander';
import { configFromFlags, withCommonOptions, type CommonFlags } from './common-options.js';

/**
 * `reports-sync run`: the long-lived service (DESIGN.md §7). One process owns the warehouse and
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
      .option('--host <host>', 'interface to bind (env REPORTS_HOST, default 127.0.0.1)'),
  )
    .addHelpText(
      'after',
      '\nSchedules (time zone REPORTS_TZ) come from jobs/*.ts; REPORTS_SCHEDULE_<JOB> overrides one\n' +
        '(e.g. REPORTS_SCHEDULE_SYNC_NDJSON="*/30 * * * * *", or off). On SIGTERM a running sync may\n' +
        'finish within REPORTS_SHUTDOWN_GRACE_MS, then it is aborted and recorded as aborted.',
    )
    .action(async (flags: CommonFlags & { port?: string; host?: string }) => {
      const { config, logger } = await configFromFlags(flags, { port: flags.port, host: flags.host });
      const [{ loadJobs }, { startDaemon }, { errorMessage }] = await Promise.all([
        import('../daemon/load-jobs.js'),
        import('../daemon/start-daemon.js'),
        import('../util/errors.js'),
      ]);
      const jobs = await loadJobs();
      const daemon = await startDaemon({ config, logger, jobs });
      process.stdout.write(`listening on ${daemon.url}\n`);
      await new Promise<void>((resolve, reject) => {
        let firstSignalAt: number | undefined;
        const onSignal = (signal: NodeJS.Signals) => {
          if (firstSignalAt !== undefined) {
            // One Ctrl-C reaches every process of the group (npm and node): only a later signal counts.
            if (Date.now() - firstSignalAt < 1_000) return;
            logger.warn({ signal }, 'second signal: aborting the running job now');
            daemon.abortNow();
            return;
          }
          firstSignalAt = Date.now();
          logger.info({ signal }, 'signal received: stopping');
          daemon.stop(signal).then(
            () => {
              process.off('SIGTERM', onSignal);
              process.off('SIGINT', onSignal);
              resolve();
            },
            (err: unknown) => reject(err instanceof Error ? err : new Error(errorMessage(err))),
          );
        };
        process.on('SIGTERM', onSignal);
        process.on('SIGINT', onSignal);
      });
      logger.flush?.();
    });
}

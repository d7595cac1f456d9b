import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { exitCodeFor } from '../../src/cli/exit-codes.js';
import { schedulePeriodMs } from '../../src/daemon/cron-times.js';
import { jobsDueAtStart } from '../../src/daemon/jobs-due.js';
import { loadJobs, resolveJobs, scheduleEnvName, type Job } from '../../src/daemon/load-jobs.js';
import { SYNC_TARGETS } from '../../src/sync/sync-sources.js';
import { tempDir } from '../helpers/sync.js';

const HOUR = 3_600_000;

describe('job declarations (jobs/)', () => {
  it('declares the default schedules: NDJSON nightly, stats hourly, CSV weekly, recent every 10 minutes', async () => {
    const jobs = await loadJobs({ env: {}, targets: ['ndjson', 'stats', 'csv', 'recent'] });
    const byName = Object.fromEntries(jobs.map((j) => [j.name, j]));
    // In their declared order: the exports before the stats snapshot (catch-up at start runs them so).
    expect(jobs.map((j) => j.name)).toEqual(['sync-ndjson', 'sync-csv', 'snapshot-stats', 'sync-recent']);
    expect(byName['sync-ndjson']).toMatchObject({ target: 'ndjson', enabled: true });
    expect(byName['snapshot-stats']).toMatchObject({ target: 'stats', enabled: true });
    expect(byName['sync-csv']).toMatchObject({ target: 'csv', enabled: true });
    expect(schedulePeriodMs(byName['sync-ndjson']!.schedule, 'UTC')).toBe(24 * HOUR);
    expect(schedulePeriodMs(byName['snapshot-stats']!.schedule, 'UTC')).toBe(HOUR);
    expect(schedulePeriodMs(byName['sync-csv']!.schedule, 'UTC')).toBe(7 * 24 * HOUR);
    expect(byName['sync-recent']).toMatchObject({ target: 'recent', enabled: true });
    expect(schedulePeriodMs(byName['sync-recent']!.schedule, 'UTC')).toBe(HOUR / 6);
  });

  it('names only targets that `sync --source` knows, or disables the job and says why', async () => {
    const jobs = await loadJobs({ env: {} });
    for (const job of jobs) {
      if (SYNC_TARGETS.includes(job.target as never)) expect(job.enabled, job.name).toBe(true);
      else expect(job.disabledReason, job.name).toMatch(/not available in this build/);
    }
    expect(jobs.find((j) => j.name === 'sync-ndjson')?.enabled).toBe(true);
  });

  it('takes a schedule (with seconds) or off from REPORTS_SCHEDULE_<JOB>', async () => {
    expect(scheduleEnvName('sync-ndjson')).toBe('REPORTS_SCHEDULE_SYNC_NDJSON');
    const jobs = await loadJobs({
      env: { REPORTS_SCHEDULE_SYNC_NDJSON: '*/3 * * * * *', REPORTS_SCHEDULE_SYNC_CSV: 'off' },
      targets: ['ndjson', 'stats', 'csv'],
    });
    const ndjson = jobs.find((j) => j.name === 'sync-ndjson');
    expect(ndjson).toMatchObject({ schedule: '*/3 * * * * *', scheduleFrom: 'REPORTS_SCHEDULE_SYNC_NDJSON' });
    expect(schedulePeriodMs(ndjson!.schedule, 'UTC')).toBe(3_000);
    expect(jobs.find((j) => j.name === 'sync-csv')).toMatchObject({
      enabled: false,
      disabledReason: 'REPORTS_SCHEDULE_SYNC_CSV=off',
    });
  });

  it('refuses a bad override with exit 2, naming the variable', async () => {
    const err = await loadJobs({ env: { REPORTS_SCHEDULE_SYNC_NDJSON: 'nightly' } }).catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: 'CONFIG_INVALID',
      message: expect.stringContaining('REPORTS_SCHEDULE_SYNC_NDJSON="nightly" is not valid'),
    });
    expect(exitCodeFor(err)).toBe(2);
  });

  describe('a folder of declarations', () => {
    let tmp: ReturnType<typeof tempDir>;
    beforeEach(() => (tmp = tempDir()));
    afterEach(() => tmp.cleanup());

    // Each case in its own file name: ESM caches a module by URL.
    const write = (file: string, body: string) =>
      writeFileSync(join(tmp.dir, file), `export default ${body};`);

    it('refuses an invalid cron expression, naming the file', async () => {
      write('a-good.js', `{ name: 'a-good', schedule: '0 * * * *', target: 'ndjson', description: 'ok' }`);
      write(
        'b-bad.js',
        `{ name: 'b-bad', schedule: '61 * * * *', target: 'ndjson', description: 'minute 61' }`,
      );
      const err = await loadJobs({ dir: tmp.dir, env: {} }).catch((e: unknown) => e);
      expect(err).toMatchObject({
        code: 'JOB_INVALID',
        message: expect.stringMatching(/jobs\/b-bad\.js has an invalid cron expression "61 \* \* \* \*"/),
      });
      expect(exitCodeFor(err)).toBe(2);
    });

    it('refuses a file that cannot be loaded (a syntax error, an import that throws), naming it', async () => {
      writeFileSync(join(tmp.dir, 'd-syntax.js'), `export default { name: 'd-syntax', error here };`);
      const err = await loadJobs({ dir: tmp.dir, env: {} }).catch((e: unknown) => e);
      expect(err).toMatchObject({
        code: 'JOB_INVALID',
        message: expect.stringMatching(/jobs\/d-syntax\.js cannot be loaded \(.+\)\. Each file in jobs\//),
      });
      expect(exitCodeFor(err)).toBe(2);
    });

    it('refuses a file whose default export is not a declaration', async () => {
      write('c-shape.js', `{ name: 'C', schedule: '0 * * * *' }`);
      await expect(loadJobs({ dir: tmp.dir, env: {} })).rejects.toThrow(
        /c-shape\.js is not a job declaration \(name: kebab-case.*target:/,
      );
    });

    it('orders jobs by their order field, then by file name', async () => {
      write('a-plain.js', `{ name: 'a-plain', schedule: '0 * * * *', target: 'ndjson', description: '' }`);
      write(
        'b-first.js',
        `{ name: 'b-first', schedule: '0 * * * *', target: 'ndjson', description: '', order: 1 }`,
      );
      write('c-plain.js', `{ name: 'c-plain', schedule: '0 * * * *', target: 'ndjson', description: '' }`);
      const jobs = await loadJobs({ dir: tmp.dir, env: {} });
      expect(jobs.map((j) => j.name)).toEqual(['b-first', 'a-plain', 'c-plain']);
    });

    it('refuses a job name declared twice, naming both files', async () => {
      write('d-one.js', `{ name: 'same', schedule: '0 * * * *', target: 'ndjson', description: '' }`);
      write('e-two.js', `{ name: 'same', schedule: '0 2 * * *', target: 'ndjson', description: '' }`);
      await expect(loadJobs({ dir: tmp.dir, env: {} })).rejects.toThrow(
        /e-two\.js declares the job name same, which d-one\.js declares already/,
      );
    });
  });
});

describe('catch-up at start', () => {
  const job = (name: string, schedule: string, enabled = true): Job => ({
    name,
    schedule,
    target: 'ndjson',
    description: '',
    file: '(inline)',
    scheduleFrom: 'declaration',
    enabled,
  });
  const now = new Date('2026-11-21T12:00:00Z');
  const success = (iso: string) => ({ job: 'x', lastSuccessStartedAt: new Date(iso) });

  it('runs a job that never succeeded, or whose last success started more than a period ago', () => {
    const jobs = [
      job('never', '0 2 * * *'),
      job('stale', '0 2 * * *'),
      job('fresh', '0 2 * * *'),
      job('hourly-fresh', '15 * * * *'),
      job('hourly-stale', '15 * * * *'),
      job('disabled', '0 2 * * *', false),
    ];
    const history = new Map([
      ['stale', success('2026-11-20T02:00:00Z')], // 34 h ago: the 02:00 run of today was missed
      ['fresh', success('2026-11-21T02:00:00Z')], // 10 h ago
      ['hourly-fresh', success('2026-11-21T11:15:00Z')],
      ['hourly-stale', success('2026-11-21T10:15:00Z')],
    ]);
    const due = jobsDueAtStart(jobs, history, 'UTC', now).map((d) => d.job.name);
    expect(due).toEqual(['never', 'stale', 'hourly-stale']);
  });
});

describe('resolveJobs', () => {
  it('keeps declaration order and the file each job came from', () => {
    const jobs = resolveJobs(
      [
        {
          file: 'b.ts',
          declaration: { name: 'b', schedule: '* * * * * *', target: 'ndjson', description: '' },
        },
        {
          file: 'a.ts',
          declaration: { name: 'a', schedule: '0 0 1 1 *', target: 'ndjson', description: '' },
        },
      ],
      {},
      ['ndjson'],
    );
    expect(jobs.map((j) => `${j.file}:${j.name}`)).toEqual(['b.ts:b', 'a.ts:a']);
  });

  it('refuses a schedule override that names no job (a typo would change nothing, silently)', () => {
    const declared = [
      {
        file: 'r.ts',
        declaration: { name: 'sync-recent', schedule: '*/5 * * * *', target: 'ndjson', description: '' },
      },
    ];
    expect(() => resolveJobs(declared, { REPORTS_SCHEDULE_SYNC_RECNT: 'off' }, ['ndjson'])).toThrow(
      /REPORTS_SCHEDULE_SYNC_RECNT names no job: the jobs are REPORTS_SCHEDULE_SYNC_RECENT/,
    );
    expect(resolveJobs(declared, { REPORTS_SCHEDULE_SYNC_RECENT: 'off' }, ['ndjson'])[0]?.enabled).toBe(
      false,
    );
  });
});

import { readdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import cron from 'node-cron';
import { z } from 'zod';
import { SYNC_TARGETS } from '../sync/sync-sources.js';
import { SyncError } from '../util/errors.js';
import type { JobDeclaration } from './define-job.js';

/**
 * The folder of job declarations: `jobs/` at the package root, next to `src/` (tests, tsx) or compiled
 * next to `dist/src/` (`dist/jobs/`, the built CLI and the Docker image).
 */
export const JOBS_DIR = fileURLToPath(new URL('../../jobs/', import.meta.url));

/** A declared job with its effective schedule (the declaration, or the env override). */
export interface Job extends Omit<JobDeclaration, 'freshnessMs'> {
  /** The file that declared it (`sync-ndjson.ts`), or `(inline)` for jobs built in code. */
  file: string;
  /** Where `schedule` comes from: `declaration`, or the environment variable that overrides it. */
  scheduleFrom: string;
  /** A disabled job is listed (`status`) but never scheduled nor caught up. */
  enabled: boolean;
  /** Why a job is disabled: `REPORTS_SCHEDULE_<NAME>=off`, or a target this build does not know. */
  disabledReason?: string | undefined;
  /**
   * Freshness objective (ms) from the declaration or `REPORTS_FRESHNESS_<NAME>`; undefined: the default
   * (twice the schedule's period, see `freshnessObjectiveMs`); `null`: no objective (`off`).
   */
  freshnessMs?: number | null | undefined;
}

const DECLARATION = z.strictObject({
  name: z.string().regex(/^[a-z][a-z0-9-]*$/, 'kebab-case: lower-case letters, digits and -'),
  schedule: z.string().min(1),
  target: z.string().min(1),
  description: z.string(),
  order: z.number().int().optional(),
  freshnessMs: z.number().int().positive().optional(),
});

/** `sync-ndjson` → `REPORTS_SCHEDULE_SYNC_NDJSON`: the variable that overrides a job's schedule. */
export function scheduleEnvName(jobName: string): string {
  return `REPORTS_SCHEDULE_${jobName.toUpperCase().replace(/-/g, '_')}`;
}

/** `sync-ndjson` → `REPORTS_FRESHNESS_SYNC_NDJSON`: the variable that overrides a job's freshness objective. */
export function freshnessEnvName(jobName: string): string {
  return `REPORTS_FRESHNESS_${jobName.toUpperCase().replace(/-/g, '_')}`;
}

/**
 * Loads every job declared in `dir` (default {@link JOBS_DIR}: each `*.ts`/`*.js` file's default export)
 * in the order of their `order` field, then file name, and applies the environment (see {@link resolveJobs}).
 *
 * @throws SyncError `JOB_INVALID` (exit 2) naming the file that cannot be loaded or whose declaration is
 *   not valid;
 *   `CONFIG_INVALID` (exit 2) for a bad `REPORTS_SCHEDULE_<NAME>` or `REPORTS_FRESHNESS_<NAME>` value, or
 *   one that names no job
 */
export async function loadJobs(
  options: { dir?: string; env?: NodeJS.ProcessEnv; targets?: readonly string[] } = {},
): Promise<Job[]> {
  const dir = options.dir ?? JOBS_DIR;
  const files = readdirSync(dir)
    .filter((f) => /^[^.].*\.(ts|js)$/.test(f) && !f.endsWith('.d.ts'))
    .sort();
  const declared: { file: string; declaration: unknown }[] = [];
  for (const file of files) {
    let module: { default?: unknown };
    try {
      module = (await import(pathToFileURL(join(dir, file)).href)) as { default?: unknown };
    } catch (err) {
      // A syntax error, a `.ts` file where only JavaScript runs, an import that throws: name the file.
      const why = (err instanceof Error ? err.message : String(err)).split('\n')[0];
      throw jobInvalid(file, `cannot be loaded (${why})`);
    }
    declared.push({ file, declaration: module.default });
  }
  const jobs = resolveJobs(declared, options.env ?? process.env, options.targets ?? SYNC_TARGETS);
  // Stable sort: jobs without `order` keep file-name order after the numbered ones.
  return jobs.sort((a, b) => (a.order ?? Infinity) - (b.order ?? Infinity) || 0);
}

/**
 * Validates job declarations and applies the environment: `REPORTS_SCHEDULE_<NAME>` replaces a job's cron
 * expression (5 or 6 fields, so tests can schedule every few seconds) or disables it with `off`. A job
 * whose target is not one of `targets` (the sources `syncTarget` resolves in this build) is disabled with
 * the reason, not dropped, so `status` and the daemon's log show it.
 *
 * @throws SyncError `JOB_INVALID` (exit 2): a declaration that is not an object of {@link JobDeclaration}'s
 *   shape, a cron expression node-cron refuses, or a name used twice; `CONFIG_INVALID` (exit 2): an
 *   override that is neither `off` nor a valid cron expression, or `REPORTS_SCHEDULE_<X>` naming no job
 */
export function resolveJobs(
  declared: ReadonlyArray<{ file: string; declaration: unknown }>,
  env: NodeJS.ProcessEnv,
  targets: readonly string[],
): Job[] {
  const jobs: Job[] = [];
  for (const { file, declaration } of declared) {
    const parsed = DECLARATION.safeParse(declaration);
    if (!parsed.success) {
      const problems = parsed.error.issues.map(
        (i) => `${i.path.join('.') || '(default export)'}: ${i.message}`,
      );
      throw jobInvalid(file, `is not a job declaration (${problems.join('; ')})`);
    }
    const job = parsed.data;
    if (!cron.validate(job.schedule)) {
      throw jobInvalid(file, `has an invalid cron expression ${JSON.stringify(job.schedule)}`);
    }
    const first = jobs.find((j) => j.name === job.name);
    if (first) {
      throw jobInvalid(file, `declares the job name ${job.name}, which ${first.file} declares already`);
    }
    const envName = scheduleEnvName(job.name);
    const override = env[envName]?.trim();
    let schedule = job.schedule;
    let scheduleFrom = 'declaration';
    let disabledReason: string | undefined;
    if (override) {
      if (override.toLowerCase() === 'off') {
        disabledReason = `${envName}=off`;
      } else if (cron.validate(override)) {
        schedule = override;
        scheduleFrom = envName;
      } else {
        throw new SyncError(
          'CONFIG_INVALID',
          `Invalid configuration:\n  ${envName}=${JSON.stringify(override)} is not valid: expected a cron ` +
            `expression (5 fields, or 6 with seconds first, e.g. "*/5 * * * * *") or off`,
          { context: { variable: envName } },
        );
      }
    }
    // `off` (null) wins over a declared objective, as an override of any value does.
    const freshness = freshnessOverride(env, job.name);
    const freshnessMs = freshness === undefined ? job.freshnessMs : freshness;
    if (!disabledReason && !targets.includes(job.target)) {
      disabledReason =
        `target ${JSON.stringify(job.target)} is not available in this build ` +
        `(reports-sync sync --source knows ${targets.join(', ')})`;
    }
    jobs.push({
      ...job,
      file,
      schedule,
      scheduleFrom,
      enabled: disabledReason === undefined,
      disabledReason,
      freshnessMs,
    });
  }
  // An override that names no job would change nothing, silently (a typo in the job's name).
  const names = new Set(jobs.flatMap((j) => [scheduleEnvName(j.name), freshnessEnvName(j.name)]));
  const stray = Object.keys(env).filter(
    (k) => /^REPORTS_(SCHEDULE|FRESHNESS)_/.test(k) && !names.has(k) && (env[k] ?? '').trim() !== '',
  );
  if (stray.length > 0) {
    throw new SyncError(
      'CONFIG_INVALID',
      `${stray.join(', ')} names no job: the jobs are ${jobs.map((j) => scheduleEnvName(j.name)).join(', ')} (jobs/*.ts)`,
      { context: { stray } },
    );
  }
  return jobs;
}

/**
 * `REPORTS_FRESHNESS_<NAME>`: milliseconds (a whole number, 1 or more) or `off` (`null`); undefined when unset.
 * @throws SyncError `CONFIG_INVALID` for any other value
 */
function freshnessOverride(env: NodeJS.ProcessEnv, jobName: string): number | null | undefined {
  const name = freshnessEnvName(jobName);
  const value = env[name]?.trim();
  if (!value) return undefined;
  if (value.toLowerCase() === 'off') return null;
  if (/^\d+$/.test(value) && Number(value) >= 1) return Number(value);
  throw new SyncError(
    'CONFIG_INVALID',
    `Invalid configuration:\n  ${name}=${JSON.stringify(value)} is not valid: expected milliseconds (a whole ` +
      `number, e.g. 172800000 for two days) or off`,
    { context: { variable: name } },
  );
}

function jobInvalid(file: string, what: string): SyncError {
  return new SyncError(
    'JOB_INVALID',
    `The job file jobs/${basename(file)} ${what}. Each file in jobs/ default-exports ` +
      `defineJob({ name, schedule, target, description, order? }).`,
    { context: { file } },
  );
}

import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/util/package-root.js';
import { spawnDaemon, waitFor } from '../helpers/daemon.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { tempDir } from '../helpers/sync.js';

/** One instruction of the Dockerfile: keyword, arguments (continuations joined), and its stage. */
interface Instruction {
  keyword: string;
  args: string;
  stage: number;
}

function parseDockerfile(text: string): Instruction[] {
  const joined = text.replace(/\\\r?\n/g, ' ');
  const out: Instruction[] = [];
  let stage = -1;
  for (const raw of joined.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const [, keyword = '', args = ''] = /^(\S+)\s*(.*)$/.exec(line) ?? [];
    if (keyword.toUpperCase() === 'FROM') stage++;
    out.push({ keyword: keyword.toUpperCase(), args: args.replace(/\s+/g, ' ').trim(), stage });
  }
  return out;
}

const root = packageRoot();
const dockerfile = parseDockerfile(readFileSync(join(root, 'Dockerfile'), 'utf8'));
const runtime = Math.max(...dockerfile.map((i) => i.stage));
const inRuntime = (keyword: string) => dockerfile.filter((i) => i.keyword === keyword && i.stage === runtime);
const exec = (i: Instruction | undefined) =>
  JSON.parse(i?.args.replace(/^--\S+(\s+--\S+)*\s+CMD\s+/, '') ?? 'null') as string[];
const env = Object.fromEntries(
  inRuntime('ENV').flatMap((i) => [...i.args.matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1]!, m[2]!])),
);

describe('Dockerfile', { timeout: 180_000 }, () => {
  it('is a multi-stage build on a Node LTS slim image that runs as a non-root user with a data volume', () => {
    const froms = dockerfile.filter((i) => i.keyword === 'FROM').map((i) => i.args);
    expect(froms.length).toBeGreaterThanOrEqual(2);
    for (const from of froms) {
      const major = Number(/^node:(\d+)-[\w-]*slim\b/.exec(from)?.[1]);
      expect(major % 2, `${from}: LTS lines are even`).toBe(0);
      expect(major).toBeGreaterThanOrEqual(24);
    }
    expect(inRuntime('USER').at(-1)?.args).toBe('node');
    expect(inRuntime('VOLUME').map((i) => i.args)).toContain('/app/data');
    expect(inRuntime('WORKDIR').at(-1)?.args).toBe('/app');
    expect(exec(inRuntime('CMD').at(-1))).toEqual(['run']);
    expect(inRuntime('EXPOSE').map((i) => i.args)).toContain(env.REPORTS_PORT);
    expect(env.REPORTS_WAREHOUSE).toBe('/app/data/warehouse.duckdb');
  });

  it('COPYs only files that exist in the repository and are not excluded from the build context', () => {
    const ignored = readFileSync(join(root, '.dockerignore'), 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    const sources = dockerfile
      .filter((i) => i.keyword === 'COPY' && !i.args.startsWith('--from'))
      .flatMap((i) => i.args.split(' ').slice(0, -1));
    expect(sources.length).toBeGreaterThan(0);
    for (const source of sources) {
      expect(existsSync(join(root, source)), `COPY ${source}`).toBe(true);
      expect(ignored, `COPY ${source} is in .dockerignore`).not.toContain(source);
    }
  });

  it('has what the build stage hands over: the built CLI at the ENTRYPOINT path, jobs and migrations', () => {
    const entry = exec(inRuntime('ENTRYPOINT').at(-1));
    expect(entry[0]).toBe('node');
    expect(existsSync(join(root, entry[1]!)), entry[1]).toBe(true); // npm test builds first (pretest)
    expect(readdirSync(join(root, 'dist', 'jobs')).filter((f) => f.endsWith('.js')).length).toBeGreaterThan(
      0,
    );
    expect(existsSync(join(root, 'dist', 'src', 'warehouse', 'migrations', '001_init.sql'))).toBe(true);
    const handedOver = dockerfile
      .filter((i) => i.keyword === 'COPY' && i.args.startsWith('--from=build'))
      .map((i) => i.args.split(' ')[1]);
    expect(handedOver).toEqual(['/app/package.json', '/app/node_modules', '/app/dist']);
  });

  describe('the runtime layout', () => {
    let tmp: ReturnType<typeof tempDir>;
    beforeEach(() => (tmp = tempDir()));
    afterEach(() => tmp.cleanup());

    it('starts the default command from the image layout (no src/), and the HEALTHCHECK passes against it', async () => {
      // /app as the runtime stage builds it: package.json, node_modules, dist, data/sample. Nothing else.
      const app = join(tmp.dir, 'app');
      mkdirSync(join(app, 'data'), { recursive: true });
      cpSync(join(root, 'package.json'), join(app, 'package.json'));
      symlinkSync(join(root, 'node_modules'), join(app, 'node_modules'), 'dir');
      cpSync(join(root, 'dist'), join(app, 'dist'), { recursive: true });
      cpSync(join(root, 'data', 'sample'), join(app, 'data', 'sample'), { recursive: true });

      const sim = await startTestSimulator({ generate: { n: 50, seed: 4 } });
      const entry = exec(inRuntime('ENTRYPOINT').at(-1));
      const cmd = exec(inRuntime('CMD').at(-1));
      const daemon = await spawnDaemon(
        {
          ...env,
          NODE_ENV: env.NODE_ENV ?? 'production',
          REPORTS_WAREHOUSE: env.REPORTS_WAREHOUSE!.replace(/^\/app/, app),
          REPORTS_HOST: '127.0.0.1', // the image binds 0.0.0.0; tests stay on loopback
          REPORTS_PORT: '0',
          REPORTS_BASE_URL: sim.url,
          REPORTS_SCHEDULE_SNAPSHOT_STATS: 'off',
          REPORTS_SCHEDULE_SYNC_CSV: 'off',
        },
        { argv: [...entry.slice(1), ...cmd], cwd: app },
      );
      try {
        const port = new URL(daemon.url).port;
        const healthcheck = exec(inRuntime('HEALTHCHECK').at(-1));
        expect(healthcheck[0]).toBe('node');
        const check = () =>
          spawnSync(process.execPath, healthcheck.slice(1), {
            env: { ...process.env, REPORTS_PORT: port },
            timeout: 20_000,
          }).status;
        expect(check()).toBe(0);
        await waitFor('the catch-up sync to be published', () =>
          existsSync(join(app, 'data', 'published', 'warehouse.duckdb')),
        );
        daemon.child.kill('SIGTERM');
        expect(await daemon.exited).toEqual({ code: 0, signal: null });
        expect(check()).toBe(1); // nothing listens any more: unhealthy
      } finally {
        daemon.cleanup();
      }
    });
  });
});

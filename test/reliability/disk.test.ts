import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateDataset } from '../../src/simulator/generate.js';
import { startSimulator, type SimulatorHandle } from '../../src/simulator/server.js';
import { openWarehouse } from '../../src/warehouse/database.js';
import { CLI, runCli, type CliResult } from '../helpers/cli.js';
import { expectRunAccounted, warehouseFingerprint } from '../helpers/reliability.js';
import { query, tempDir } from '../helpers/sync.js';

// Issue 6, case 7: disk full or an unwritable warehouse directory gives a clear error, exit 1, and no
// corrupted file. We run as root here, so permission bits do not stop a write. What works as root:
// - "unwritable directory": a path whose folder is a regular file (mkdir fails, ENOTDIR/EEXIST), and a
//   folder bind-mounted read-only in a private mount namespace (`unshare -m`: EROFS, root or not);
// - "disk full": `ulimit -f` in the child (the kernel refuses to grow a file past the limit: EFBIG, and
//   Node ignores SIGXFSZ) and a 3 MiB tmpfs in a private mount namespace (a real ENOSPC).
// The namespaces need CAP_SYS_ADMIN (root on these machines and in CI); those two tests are skipped
// with a note where `unshare -m` is refused.

const canUnshare = spawnSync('unshare', ['-m', 'true']).status === 0;
if (!canUnshare) console.warn('unshare -m is not permitted here: the mount-namespace tests are skipped');

const sha256 = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

/**
 * Runs `sh -c script` with the CLI's path as $CLI and node as $NODE; collects output like runCli. With
 * `privateMounts`, the shell runs in its own mount namespace (`unshare -m`, private propagation), so its
 * mounts never reach the machine and vanish with it.
 */
function runShell(
  script: string,
  env: Record<string, string>,
  options: { privateMounts?: boolean } = {},
): Promise<CliResult> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('REPORTS_')));
  return new Promise((resolve) => {
    const argv = options.privateMounts
      ? ['unshare', ['-m', '--propagation', 'private', 'sh', '-c', script]]
      : ['sh', ['-c', script]];
    const child = spawn(argv[0] as string, argv[1] as string[], {
      env: { ...base, REPORTS_LOG_PRETTY: 'false', NODE: process.execPath, CLI, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

describe('disk full and unwritable warehouse (case 7)', () => {
  let small: SimulatorHandle;
  let large: SimulatorHandle;
  let tmp: ReturnType<typeof tempDir>;
  let n = 0;

  beforeAll(async () => {
    tmp = tempDir('reports-sync-disk-');
    small = await startSimulator({ dataset: generateDataset(200, 5) });
    large = await startSimulator({ dataset: generateDataset(3_000, 5) });
  });
  afterAll(async () => {
    await small.close();
    await large.close();
    tmp.cleanup();
  });

  /** A folder holding a warehouse synced once from the small upstream, with its fingerprint. */
  async function syncedWarehouse() {
    const dir = join(tmp.dir, `case-${++n}`);
    mkdirSync(dir);
    const path = join(dir, 'w.duckdb');
    const first = await runCli(['sync'], { REPORTS_BASE_URL: small.url, REPORTS_WAREHOUSE: path });
    expect(first.code, first.stderr).toBe(0);
    return { dir, path, before: await fingerprintOf(path) };
  }

  async function fingerprintOf(path: string) {
    const w = await openWarehouse(path, { readOnly: true });
    try {
      return await warehouseFingerprint(w);
    } finally {
      w.close();
    }
  }

  /** The file opens read-write again, holds the committed state, and a full run converges. */
  async function expectIntactAndRecovers(path: string, before: unknown, upstream = large) {
    expect(await fingerprintOf(path)).toEqual(before);
    const again = await runCli(['sync'], { REPORTS_BASE_URL: upstream.url, REPORTS_WAREHOUSE: path });
    expect(again.code, again.stderr).toBe(0);
    const w = await openWarehouse(path);
    try {
      const runs = await query(
        w,
        `SELECT run_id, status, error->>'code' AS code FROM sync_runs ORDER BY started_at`,
      );
      expect(runs.map((r) => r.status)).toEqual([
        'succeeded',
        expect.stringMatching(/^(failed|aborted)$/),
        'succeeded',
      ]);
      for (const r of runs) await expectRunAccounted(w, String(r.run_id));
      const [{ count } = {}] = await query(w, `SELECT count(*) AS count FROM reports`);
      expect(count).toBe(upstream.dataset.exportCount);
      return runs[1];
    } finally {
      w.close();
    }
  }

  const expectClearFailure = (out: CliResult, path: string, cause: RegExp) => {
    expect(out.code).toBe(1);
    const all = out.stdout + out.stderr;
    expect(all).toContain(`Cannot write the warehouse ${path}`);
    expect(all).toMatch(cause);
    expect(all).not.toContain('unexpected error');
  };

  it('a warehouse path below a regular file: exit 1 naming the problem; the file untouched', async () => {
    const file = join(tmp.dir, 'not-a-folder');
    writeFileSync(file, 'precious\n');
    const out = await runCli(['sync'], {
      REPORTS_BASE_URL: small.url,
      REPORTS_WAREHOUSE: join(file, 'w.duckdb'),
    });
    expect(out.code).toBe(1);
    expect(out.stderr).toContain(`Cannot open the warehouse ${join(file, 'w.duckdb')}`);
    expect(out.stderr).toContain('is a file, not a folder');
    expect(readFileSync(file, 'utf8')).toBe('precious\n');
  });

  it('disk full (ulimit -f: the first batch cannot be written): exit 1, a clear error, the run recorded, data intact', async () => {
    const { path, before } = await syncedWarehouse();
    const limit = Math.ceil(readFileSync(path).length / 1024) + 64;
    const out = await runShell(`ulimit -f ${limit} && exec "$NODE" "$CLI" sync`, {
      REPORTS_BASE_URL: large.url,
      REPORTS_WAREHOUSE: path,
    });
    expectClearFailure(out, path, /file too large/i);
    expect(out.stdout).toMatch(/FAILED/); // the run log took the failure: the summary could be printed
    const failed = await expectIntactAndRecovers(path, before);
    expect(failed).toMatchObject({ status: 'failed', code: 'WAREHOUSE_WRITE' });
  });

  it.skipIf(!canUnshare)(
    'disk full (a 4 MiB tmpfs): exit 1, a clear error, the committed data intact',
    async () => {
      const { dir, path, before } = await syncedWarehouse();
      const mount = join(dir, 'small-disk');
      const out_ = join(dir, 'after');
      mkdirSync(mount);
      mkdirSync(out_);
      // In a private mount namespace: a 4 MiB file system holding a copy of the warehouse; after the sync the
      // files are copied out (the mount vanishes with the namespace).
      const out = await runShell(
        `mount -t tmpfs -o size=4m tmpfs "$MNT" && cp "$SRC" "$MNT/w.duckdb" &&
       "$NODE" "$CLI" sync; rc=$?; cp "$MNT"/w.duckdb* "$OUT"/; exit $rc`,
        {
          MNT: mount,
          SRC: path,
          OUT: out_,
          REPORTS_BASE_URL: large.url,
          REPORTS_WAREHOUSE: join(mount, 'w.duckdb'),
        },
        { privateMounts: true },
      );
      expectClearFailure(out, join(mount, 'w.duckdb'), /no space left on device/i);
      expect(readdirSync(mount)).toEqual([]); // the mount was private to the child
      await expectIntactAndRecovers(join(out_, 'w.duckdb'), before);
    },
  );

  it.skipIf(!canUnshare)(
    'a read-only warehouse folder: exit 1, a clear error, the file byte for byte unchanged',
    async () => {
      const { dir, path } = await syncedWarehouse();
      const hash = sha256(path);
      const out = await runShell(
        `mount --bind "$DIR" "$DIR" && mount -o remount,ro,bind "$DIR" && exec "$NODE" "$CLI" sync`,
        {
          DIR: dir,
          REPORTS_BASE_URL: large.url,
          REPORTS_WAREHOUSE: path,
        },
        { privateMounts: true },
      );
      expect(out.code).toBe(1);
      expect(out.stderr).toContain(`Cannot open the warehouse ${path}`);
      expect(out.stderr).toContain('read-only file system');
      expect(sha256(path)).toBe(hash);
    },
  );
});

import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { startTestSimulator, type TestSimulator } from '../helpers/simulator.js';
import { tempDir } from '../helpers/sync.js';
import { newWebhookSecret } from '../helpers/webhook-receiver.js';

// The operator's commands on the built CLI: `runs`, `runs show`, `reset`, and the alert settings in `config`.
describe('reports-sync runs, runs show and reset', { timeout: 180_000 }, () => {
  let tmp: ReturnType<typeof tempDir>;
  let sim: TestSimulator;
  let env: Record<string, string>;
  let good: string;
  let failed: string;

  beforeAll(async () => {
    tmp = tempDir();
    sim = await startTestSimulator({ fixture: 'small.ndjson' });
    env = {
      REPORTS_WAREHOUSE: join(tmp.dir, 'warehouse.duckdb'),
      REPORTS_BASE_URL: sim.url,
      REPORTS_MAX_REJECT_RATIO: '0.5',
      REPORTS_LOG_LEVEL: 'silent',
    };
    const first = await runCli(['sync', '--json'], env);
    expect(first.code).toBe(0);
    good = (JSON.parse(first.stdout) as { runs: { runId: string }[] }).runs[0]!.runId;
    sim.setFaults(['ndjson:status=403']);
    const second = await runCli(['sync', '--json'], env);
    expect(second.code).toBe(1);
    failed = (JSON.parse(second.stdout) as { runs: { runId: string }[] }).runs[0]!.runId;
    sim.setFaults([]);
  }, 120_000);
  afterAll(async () => {
    await sim?.close();
    tmp?.cleanup();
  });

  it('lists the runs, filters the failed ones, and gives the same facts as JSON', async () => {
    const list = await runCli(['runs'], env);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain(good);
    expect(list.stdout).toContain(failed);
    expect(list.stdout).toMatch(new RegExp(`${failed}: HTTP_STATUS: `));

    const only = await runCli(['runs', '--failed', '--json'], env);
    const runs = (JSON.parse(only.stdout) as { runs: { runId: string; status: string; errorCode: string }[] })
      .runs;
    expect(runs.map((r) => [r.runId, r.status, r.errorCode])).toEqual([[failed, 'failed', 'HTTP_STATUS']]);

    const none = await runCli(['runs', '--job', 'no-such-job'], env);
    expect(none.stdout).toContain('No of job no-such-job run in the run log.');
  });

  it('shows one run: counters, rejects by code and path with raw examples, and the alert it raised', async () => {
    const show = await runCli(['runs', 'show', good, '--json'], env);
    expect(show.code).toBe(0);
    const { run } = JSON.parse(show.stdout) as {
      run: {
        status: string;
        recordsRead: number;
        recordsRejected: number;
        rejects: { code: string; records: number; examples: { raw: string }[] }[];
      };
    };
    expect(run).toMatchObject({ status: 'succeeded', recordsRead: 14, recordsRejected: 4 });
    expect(run.rejects.reduce((a, g) => a + g.records, 0)).toBe(4);
    expect(run.rejects.every((g) => g.examples.length >= 1 && g.examples[0]!.raw.length > 0)).toBe(true);

    const text = await runCli(['runs', 'show', failed], env);
    expect(text.stdout).toContain(`Run ${failed}: failed`);
    expect(text.stdout).toMatch(/error HTTP_STATUS: /);
    expect(text.stdout).toMatch(/Alerts raised:\n.* run\.failed \(open\): sync-ndjson failed: HTTP_STATUS/);

    const unknown = await runCli(['runs', 'show', 'no-such-run'], env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('holds no run "no-such-run"');
  });

  it('reset refuses without --yes, then empties the data tables, keeps the run log, and the next sync reloads all', async () => {
    const refused = await runCli(['reset'], env);
    expect(refused.code).toBe(2);
    expect(refused.stdout).toMatch(/empties these data tables[\s\S]*report_rows\s+10\b/);
    expect(refused.stderr).toContain('Nothing was deleted: run `reports-sync reset --yes`');

    const done = await runCli(['reset', '--yes', '--json'], env);
    expect(done.code).toBe(0);
    const result = JSON.parse(done.stdout) as {
      runId: string;
      emptied: { table: string; rows: number }[];
      kept: { table: string; rows: number }[];
    };
    expect(result.emptied.find((t) => t.table === 'report_rows')?.rows).toBe(10);
    expect(result.kept.find((t) => t.table === 'sync_runs')?.rows).toBe(3); // the two runs and the reset
    const counts = await runCli(
      [
        'sql',
        '--format',
        'json',
        'select (select count(*) from reports) as reports, (select count(*) from sync_runs) as runs',
      ],
      env,
    );
    expect(JSON.parse(counts.stdout)).toEqual([{ reports: 0, runs: 3 }]);

    // The next sync is not answered 304 from the validators of the runs before the reset: it loads all.
    const again = await runCli(['sync', '--json'], env);
    expect(again.code).toBe(0);
    const run = (
      JSON.parse(again.stdout) as { runs: { notModified: boolean; counters: { inserted: number } }[] }
    ).runs[0];
    expect(run).toMatchObject({ notModified: false, counters: { inserted: 10 } });
  });
});

describe('alert settings in reports-sync config', () => {
  it('prints webhook URLs without their path and never the secret', async () => {
    const secret = newWebhookSecret();
    const env = {
      REPORTS_ALERT_WEBHOOK_URL:
        'https://hooks.example.org/alerts/T0KEN123, https://hooks.slack.com/services/T1/B2/XyZsecretPath',
      REPORTS_ALERT_WEBHOOK_SECRET: secret,
    };
    const shown = await runCli(['config'], env);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(
      /^REPORTS_ALERT_WEBHOOK_URL\s+https:\/\/hooks\.example\.org\/\[redacted\] https:\/\/hooks\.slack\.com\/\[redacted\]\s+\(environment\)$/m,
    );
    expect(shown.stdout).toMatch(/^REPORTS_ALERT_WEBHOOK_SECRET\s+\[redacted\]/m);
    for (const leak of ['T0KEN123', 'XyZsecretPath', secret, secret.slice(6)])
      expect(shown.stdout).not.toContain(leak);
  });

  it('refuses a webhook that must be signed when no secret is set, saying how to make one', async () => {
    const res = await runCli(['config'], {
      REPORTS_ALERT_WEBHOOK_URL: 'https://hooks.example.org/alerts/T0KEN123',
    });
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('REPORTS_ALERT_WEBHOOK_SECRET is not set');
    expect(res.stderr).toContain('openssl rand -base64 32');
    expect(res.stderr).not.toContain('T0KEN123');
  });
});

import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSyncedReader, type SyncedReader } from '../helpers/reader.js';
import { query, syncTargetOnce } from '../helpers/sync.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const available = existsSync(CHROMIUM);
// In CI a missing browser is a failure (the beforeAll below throws), never a silent skip.
const run = available || process.env.CI === 'true';

const fmt = (n: number) => n.toLocaleString('en');

describe.skipIf(!run)('the status page at / in a real browser (Chromium)', () => {
  let s: SyncedReader;
  let browser: Browser;
  let page: Page;
  const requested: string[] = [];

  beforeAll(async () => {
    if (!available)
      throw new Error(`Chromium not found at ${CHROMIUM}: install it (apt-get install chromium)`);
    // The fixture holds 4 invalid records among 14 lines: allow that reject ratio.
    s = await startSyncedReader(
      { fixture: 'small.ndjson' },
      { maxRejectRatio: 0.5, readerValidatorsTtlMs: 0, conditionalExports: false },
    );
    // A second full run with its /stats comparison (upstream total vs warehouse): not conditional, so the
    // unchanged export is read again rather than answered 304.
    const second = await syncTargetOnce(s.warehouse, s.config, 'ndjson');
    expect(second.every((r) => r.status === 'succeeded')).toBe(true);
    // A status outside the known lifecycle, as an upstream that grew a new one would leave it.
    await query(
      s.warehouse,
      `INSERT INTO report_rows (id, status, destination, created_at, updated_at, content_hash, first_seen_at,
         last_seen_at, last_changed_at, source, run_id)
       VALUES ('escalated-1', 'ESCALATED', 'ROAD_CONTROL', now(), now(), 'h', now(), now(), now(), 'ndjson', 'x')`,
    );
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
    });
    page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
    page.on('request', (r) => requested.push(r.url()));
    const res = await page.goto(`${s.reader.url}/`);
    expect(res?.status()).toBe(200);
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await s?.close();
  });

  it('shows the title, and loads nothing but the page itself (works offline)', async () => {
    await expect(page.title()).resolves.toBe('reports-sync status');
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('reports-sync status');
    expect(requested.filter((u) => !u.startsWith(s.reader.url))).toEqual([]);
    expect(await page.locator('meta[http-equiv="refresh"]').getAttribute('content')).toMatch(/^\d+$/);
  });

  it('shows the freshness of each job and the last runs with their figures', async () => {
    const fresh = page.getByRole('table', { name: 'Freshness per job' });
    const job = fresh.getByRole('row').filter({ hasText: 'sync-ndjson' });
    await expect(job.textContent()).resolves.toMatch(/ago.*succeeded/s);

    const runs = await query(
      s.warehouse,
      'SELECT run_id, inserted, records_rejected FROM sync_runs ORDER BY started_at DESC',
    );
    const table = page.getByRole('table', { name: /Last \d+ runs/ });
    expect(await table.locator('tbody tr').count()).toBe(runs.length);
    const first = runs.find((r) => r.run_id === s.run.runId);
    const cells = await table.locator('tbody tr', { hasText: s.run.runId }).locator('td').allTextContents();
    expect(cells[2]).toBe('succeeded');
    expect(cells[5]).toBe(fmt(Number(first?.inserted))); // inserted
    expect(cells[8]).toBe(fmt(Number(first?.records_rejected))); // rejected
    expect(Number(first?.inserted)).toBeGreaterThan(0);
  });

  it('charts the reports by status (inline SVG) with the current counts in the legend', async () => {
    await expect(page.getByRole('img', { name: /Reports by status/ }).isVisible()).resolves.toBe(true);
    const counts = await query(
      s.warehouse,
      `SELECT status, count(*) AS n FROM report_versions WHERE valid_to IS NULL AND change <> 'remove' GROUP BY ALL`,
    );
    const legend = await page
      .locator('section', { hasText: 'Reports over time by status' })
      .locator('li')
      .allTextContents();
    expect(legend.sort()).toEqual(counts.map((c) => `${c.status}: ${fmt(Number(c.n))}`).sort());
  });

  it('lists the top reject reasons with an example location from the quarantine', async () => {
    const rejected = await query(s.warehouse, 'SELECT location FROM rejected_records');
    expect(rejected.length).toBeGreaterThan(0);
    const rows = page.getByRole('table', { name: 'Top reject reasons' }).locator('tbody tr');
    const cells = await rows.first().locator('td').allTextContents();
    expect(rejected.map((r) => r.location)).toContain(cells[2]);
    const total = (await rows.locator('td:nth-child(2)').allTextContents()).reduce(
      (a, t) => a + Number(t),
      0,
    );
    expect(total).toBe(rejected.length);
  });

  it('compares the upstream /stats total with the warehouse and names the unknown status', async () => {
    const [last] = await query(
      s.warehouse,
      `SELECT stats_total_upstream AS up, stats_total_warehouse AS wh, stats_total_diff AS diff FROM sync_runs
       WHERE stats_total_upstream IS NOT NULL ORDER BY finished_at DESC LIMIT 1`,
    );
    const drift = page.getByRole('table', { name: 'Upstream vs warehouse' });
    const text = (await drift.textContent()) ?? '';
    expect(text).toContain(`Upstream /stats total${fmt(Number(last?.up))}`);
    expect(text).toContain(`Warehouse total${fmt(Number(last?.wh))}`);
    expect(text).toMatch(new RegExp(`Drift\\+?${fmt(Number(last?.diff))}`));
    // The unknown status arrived after the page was cached for this run; a new run renews it.
    await query(
      s.warehouse,
      `INSERT INTO sync_runs (run_id, job, source, status, started_at, finished_at, inserted)
       VALUES ('later', 'sync-ndjson', 'ndjson', 'succeeded', now(), now() + INTERVAL 1 SECOND, 1)`,
    );
    await page.reload();
    const unknown = page.getByRole('table', { name: 'Unknown values seen' });
    expect(await unknown.locator('tbody tr').first().locator('td').allTextContents()).toEqual([
      'status',
      'ESCALATED',
      '1',
    ]);
    const shot = process.env.STATUS_PAGE_SCREENSHOT;
    if (shot) await page.screenshot({ path: shot, fullPage: true });
  });
});

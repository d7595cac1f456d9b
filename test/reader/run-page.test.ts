import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AlertCenter } from '../../src/alerts/alert-center.js';
import { silentLogger } from '../../src/util/logger.js';
import { startSyncedReader, type SyncedReader } from '../helpers/reader.js';
import { query, syncTargetOnce } from '../helpers/sync.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const available = existsSync(CHROMIUM);
// In CI a missing browser is a failure (the beforeAll below throws), never a silent skip.
const run = available || process.env.CI === 'true';

const fmt = (n: number) => n.toLocaleString('en');

describe.skipIf(!run)('the run pages and charts in a real browser (Chromium), at 1280 and 390 px', () => {
  let s: SyncedReader;
  let browser: Browser;
  let failedRunId: string;
  let statsRunId: string;

  /** A page `width` px wide on `path` of the reader, with the no-JavaScript guarantee checked too. */
  const open = async (path: string, width: number): Promise<Page> => {
    const page = await browser.newPage({ viewport: { width, height: 900 }, javaScriptEnabled: false });
    const res = await page.goto(`${s.reader.url}${path}`);
    expect(res?.status()).toBe(200);
    return page;
  };
  /** Nothing runs off the right edge: the page does not scroll sideways (tables scroll inside their box). */
  const fits = async (page: Page, width: number) => {
    // The page's width as the browser lays it out (no DOM types here: the expression runs in the page).
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(width);
    for (const box of await page
      .locator('svg[role="img"]')
      .evaluateAll((els) => els.map((e) => e.getBoundingClientRect().right))) {
      expect(box).toBeLessThanOrEqual(width);
    }
  };

  beforeAll(async () => {
    if (!available)
      throw new Error(`Chromium not found at ${CHROMIUM}: install it (apt-get install chromium)`);
    // small.ndjson quarantines 4 of its 14 lines: allow that reject ratio.
    s = await startSyncedReader(
      { fixture: 'small.ndjson' },
      { maxRejectRatio: 0.5, readerValidatorsTtlMs: 0 },
    );
    const [stats] = await syncTargetOnce(s.warehouse, s.config, 'stats');
    statsRunId = stats!.runId;
    s.simulator.setFaults(['ndjson:status=403']);
    const [failed] = await syncTargetOnce(s.warehouse, s.config, 'ndjson');
    expect(failed?.status).toBe('failed');
    failedRunId = failed!.runId;
    const alerts = new AlertCenter({ warehouse: s.warehouse, config: s.config, logger: silentLogger() });
    await alerts.afterRuns([s.run.runId, statsRunId, failedRunId]);
    await alerts.close(0);
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
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await s?.close();
  });

  for (const width of [1280, 390]) {
    it(`shows the open alert at the top and links each run to its page (${width} px)`, async () => {
      const page = await open('/', width);
      const alerts = page.locator('section', { has: page.getByRole('heading', { name: /^Open alerts/ }) });
      expect(await page.locator('main > section').first().textContent()).toContain('Open alerts (1)');
      const text = (await alerts.textContent()) ?? '';
      expect(text).toContain('run.failed');
      expect(text).toContain('sync-ndjson failed: HTTP_STATUS');
      await alerts.getByRole('link', { name: failedRunId }).click();
      expect(new URL(page.url()).pathname).toBe(`/runs/${failedRunId}`);
      const [row] = await query(
        s.warehouse,
        `SELECT error->>'code' AS code, error->>'message' AS message FROM sync_runs WHERE run_id = $run`,
        {
          run: failedRunId,
        },
      );
      expect(await page.locator('#error-code').textContent()).toBe(row?.code);
      expect(await page.locator('#error-message').textContent()).toBe(row?.message);
      expect(await page.getByRole('table', { name: 'Alerts raised' }).textContent()).toContain('run.failed');
      await fits(page, width);
      await page.close();
    });

    it(`shows the figures of a known run: counters, rejects by code and path with raw examples (${width} px)`, async () => {
      const page = await open('/', width);
      await page
        .getByRole('table', { name: /Last \d+ runs/ })
        .getByRole('link', { name: s.run.runId })
        .click();
      expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe(`Run ${s.run.runId}`);
      const [run] = await query(
        s.warehouse,
        `SELECT records_read, records_rejected, inserted, status FROM sync_runs WHERE run_id = $run`,
        { run: s.run.runId },
      );
      const counters = page.getByRole('table', { name: 'Counters' });
      const counter = async (name: string) =>
        (
          await counters
            .getByRole('row')
            .filter({ hasText: new RegExp(`^${name}`) })
            .locator('td')
            .allTextContents()
        )[1];
      expect(await counter('records read')).toBe(fmt(Number(run?.records_read)));
      expect(await counter('records rejected')).toBe(fmt(Number(run?.records_rejected)));
      expect(await counter('inserted')).toBe(fmt(Number(run?.inserted)));

      // Rejects: one row per (code, path); their records add up to the run's rejects; the first example is
      // the raw text of the group's first record.
      const groups = await query(
        s.warehouse,
        `SELECT coalesce(issues->>'$[0].code', issues->>'$[0].message') AS code, coalesce(issues->>'$[0].path', '') AS path,
                count(*) AS n, arg_min(raw, coalesce(line, 0)) AS raw
         FROM rejected_records WHERE run_id = $run GROUP BY ALL ORDER BY n DESC, path, code`,
        { run: s.run.runId },
      );
      const rows = page.getByRole('table', { name: 'Rejects by issue code and path' }).locator('tbody tr');
      expect(await rows.count()).toBe(groups.length);
      let total = 0;
      for (const [i, g] of groups.entries()) {
        const cells = await rows.nth(i).locator('td').allTextContents();
        expect(cells[0]).toBe(g.code);
        expect(cells[1]).toBe(g.path === '' ? '(record)' : g.path);
        total += Number(cells[2]);
        expect(await rows.nth(i).locator('pre').first().textContent()).toBe(String(g.raw).slice(0, 240));
      }
      expect(total).toBe(Number(run?.records_rejected));
      await fits(page, width);
      if (width === 1280 && process.env.RUN_PAGE_SCREENSHOT) {
        await page.screenshot({ path: process.env.RUN_PAGE_SCREENSHOT });
      }
      await page.close();
    });

    it(`charts each job's last runs and upstream vs warehouse, as SVG without JavaScript (${width} px)`, async () => {
      const page = await open('/', width);
      const read = page.getByRole('img', { name: 'Records read by each run of each job' });
      await expect(read.isVisible()).resolves.toBe(true);
      const titles = await read.locator('title').allTextContents();
      const [known] = await query(s.warehouse, `SELECT records_read FROM sync_runs WHERE run_id = $run`, {
        run: s.run.runId,
      });
      expect(titles).toContain(
        `sync-ndjson: ${fmt(Number(known?.records_read))} (run ${s.run.runId}, succeeded)`,
      );
      // The failed run is plotted too (it read nothing), labelled as such.
      expect(titles).toContain(`sync-ndjson: 0 (run ${failedRunId}, failed)`);

      const [totals] = await query(
        s.warehouse,
        `SELECT stats_total_upstream AS up, stats_total_warehouse AS wh FROM sync_runs WHERE run_id = $run`,
        { run: statsRunId },
      );
      const legend = await page
        .locator('section', {
          has: page.getByRole('heading', { name: 'Upstream /stats total vs warehouse' }),
        })
        .locator('li')
        .allTextContents();
      expect(legend).toEqual([
        `upstream /stats: ${fmt(Number(totals?.up))}`,
        `warehouse: ${fmt(Number(totals?.wh))}`,
      ]);
      await fits(page, width);
      if (width === 390 && process.env.STATUS_PHONE_SCREENSHOT) {
        await page.screenshot({ path: process.env.STATUS_PHONE_SCREENSHOT, fullPage: false });
      }
      await page.close();
    });
  }

  it('answers 404 with a page for a run the run log does not hold', async () => {
    const res = await fetch(`${s.reader.url}/runs/no-such-run`);
    expect(res.status).toBe(404);
    expect(await res.text()).toContain('No run no-such-run');
  });
});

// How a `recent` run ends, as the pager decided it (recent-paging.ts).

/** Why a `recent` run stops reading pages. */
export type StopReason =
  /** Every valid record of the page is already in the warehouse: older pages are too (newest first). */
  | 'caught-up'
  /** The page was empty or shorter than the page size: the list has no more pages. */
  | 'end'
  /** The page holds the same ids as the previous one (the server ignored `page`): the run is incomplete. */
  | 'repeated'
  /** `REPORTS_RECENT_MAX_PAGES` pages were read without catching up: the gap is left to the next full export. */
  | 'max-pages'
  /** A report is newer than the one before it: the list is not newest first, so no page says where new ones end. */
  | 'unordered';

/** What to do after a page: read the next one, or stop (with `use` false when the page itself is dropped). */
export type PageDecision =
  | { next: true; size?: number; tieAt?: number }
  | { next: false; reason: StopReason; complete: boolean; use: boolean };

/** What follows a list page for the read loop: hand its records on (`use`), then end with `outcome` or read on. */
export interface RecentStep {
  use: boolean;
  /** Set when the run ends here (complete, or incomplete with the reason). */
  outcome?: { complete: true } | { complete: false; reason: string } | undefined;
  /** The log lines the loop writes when the run ends. */
  logs: Array<{ level: 'info' | 'warn'; fields: Record<string, unknown>; message: string }>;
}

/** The step that ends a `recent` run at list page `page`: its outcome and log lines, by the pager's reason. */
export function stopStep(
  decision: Extract<PageDecision, { next: false }>,
  page: number,
  pageSize: number,
): RecentStep {
  const level = decision.complete ? 'info' : 'warn';
  const logs: RecentStep['logs'] = [
    { level, fields: { pages: page, stop: decision.reason }, message: 'recent: list read' },
  ];
  if (decision.reason === 'repeated') {
    const reason =
      `list page ${page} repeats page ${page - 1} (the server ignored \`page\`, or exactly a page of ` +
      'reports was published between the two reads): reports past it are left to the next full export';
    return { use: decision.use, outcome: { complete: false, reason }, logs };
  }
  if (decision.reason === 'unordered') {
    logs.push({
      level: 'warn',
      fields: { page },
      message:
        'recent: the list is not ordered newest first by createdAt, so where the new reports end cannot be told: ' +
        'the reports read are merged, the rest is left to the next full export (check REPORTS_LIST_PATH)',
    });
    const reason = `list page ${page} is not ordered newest first by createdAt: new reports past it are left to the next full export`;
    return { use: decision.use, outcome: { complete: false, reason }, logs };
  }
  if (decision.reason === 'max-pages') {
    logs.push({
      level: 'warn',
      fields: { pages: page, pageSize: pageSize },
      message:
        'recent: REPORTS_RECENT_MAX_PAGES pages read without reaching known reports: the gap is left to the next full export',
    });
    const reason = `stopped after ${page} list pages (REPORTS_RECENT_MAX_PAGES)`;
    return { use: decision.use, outcome: { complete: false, reason }, logs };
  }
  return { use: decision.use, outcome: { complete: true }, logs };
}

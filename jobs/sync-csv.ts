import { defineJob } from '../src/daemon/define-job.js';

// Weekly paged CSV export, Sundays at 03:30 (REPORTS_TZ): a second full export to cross-check NDJSON.
export default defineJob({
  name: 'sync-csv',
  schedule: '30 3 * * 0',
  target: 'csv',
  order: 2,
  description: 'paged CSV export, weekly on Sunday at 03:30',
});

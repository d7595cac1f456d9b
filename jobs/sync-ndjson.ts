import { defineJob } from '../src/daemon/define-job.js';

// Nightly full NDJSON export at 02:00 (REPORTS_TZ): the main sync, tombstones included.
export default defineJob({
  name: 'sync-ndjson',
  schedule: '0 2 * * *',
  target: 'ndjson',
  order: 1,
  description: 'full NDJSON export, nightly at 02:00',
});

import { defineJob } from '../src/daemon/define-job.js';

// Every 10 minutes, the newest reports of the list endpoint (REPORTS_TZ): new reports reach the mirror
// within minutes; the queue runs it between the other jobs, never during a full export.
export default defineJob({
  name: 'sync-recent',
  schedule: '*/10 * * * *',
  target: 'recent',
  order: 4,
  description: 'newest reports from the list endpoint, every 10 minutes',
});

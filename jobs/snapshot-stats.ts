import { defineJob } from '../src/daemon/define-job.js';

// Hourly snapshot of the upstream /stats counters next to the warehouse's own.
export default defineJob({
  name: 'snapshot-stats',
  schedule: '15 * * * *',
  target: 'stats',
  order: 3,
  description: 'upstream /stats snapshot, hourly at :15',
});

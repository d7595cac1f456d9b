import { describe, expect, it } from 'vitest';
import { withRetry } from '../../src/upstream/with-retry.js';
import { SyncError } from '../../src/util/errors.js';
import { capturingLogger } from '../helpers/sync.js';

const policy = { retries: 3, retryBaseMs: 1, retryMaxTimeMs: 5_000 };
const reset = () => new SyncError('HTTP_NETWORK', 'ECONNRESET while reading', { retryable: true });

describe('withRetry', () => {
  it('retries a retryable failure with a warning per attempt', async () => {
    const { logger, lines } = await capturingLogger();
    let n = 0;
    const value = await withRetry('page', policy, logger, async () => {
      if (++n < 3) throw reset();
      return 'ok';
    });
    expect([value, n]).toEqual(['ok', 3]);
    expect(lines.filter((l) => String(l.msg).includes('retrying'))).toHaveLength(2);
  });

  it('a request its caller dropped (signal aborted) is neither retried nor warned about', async () => {
    const { logger, lines } = await capturingLogger();
    const dropped = new AbortController();
    let n = 0;
    const run = withRetry(
      'page fetched ahead',
      policy,
      logger,
      async () => {
        n++;
        dropped.abort(new Error('CSV export read ended'));
        throw reset();
      },
      dropped.signal,
    );
    // Rejected with the stop's reason: the network error it cut short is no failure of the run.
    await expect(run).rejects.toThrow('CSV export read ended');
    expect(n).toBe(1);
    expect(lines).toEqual([]);
  });
});

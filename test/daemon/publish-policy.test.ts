import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PublishPolicy } from '../../src/daemon/publish-policy.js';

const MIN = 60_000;

describe('PublishPolicy (when the daemon republishes its snapshot)', () => {
  it('publishes a first change at once, never after a job that changed nothing, and defers changes inside the interval', () => {
    let now = 1_000_000;
    const policy = new PublishPolicy(MIN, new Date(now - MIN), () => now);
    expect(policy.afterJob(false)).toBe('unchanged');
    expect(policy.afterJob(true)).toBe('publish');
    policy.published();
    now += 10_000;
    expect(policy.afterJob(false)).toBe('unchanged');
    expect(policy.afterJob(true)).toBe('deferred');
    now += 10_000;
    expect(policy.afterJob(false)).toBe('deferred'); // the earlier change still waits
    now += MIN;
    expect(policy.afterJob(false)).toBe('publish'); // ... and goes out after the first job past the interval
    policy.published();
    expect(policy.pending).toBe(false);
  });

  it('publishes after the first job when there is no published copy yet, even one that changed nothing', () => {
    expect(new PublishPolicy(MIN, undefined, () => 0).afterJob(false)).toBe('publish');
  });

  it('respects the age of an existing published copy at start', () => {
    const now = 5_000_000;
    expect(new PublishPolicy(MIN, new Date(now - 1_000), () => now).afterJob(true)).toBe('deferred');
    expect(new PublishPolicy(MIN, new Date(now - MIN), () => now).afterJob(true)).toBe('publish');
  });

  it('over any sequence of jobs: publishes at most once per interval, and no change is left behind once a job runs past the interval', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ gap: fc.integer({ min: 0, max: 3 * MIN }), changed: fc.boolean() }), {
          maxLength: 60,
        }),
        (jobs) => {
          let now = 0;
          const policy = new PublishPolicy(MIN, new Date(-MIN), () => now);
          let last: number | undefined = -MIN;
          let changedSince = false;
          for (const job of jobs) {
            now += job.gap;
            changedSince ||= job.changed;
            const decision = policy.afterJob(job.changed);
            if (decision === 'publish') {
              expect(changedSince).toBe(true);
              if (last !== undefined) expect(now - last).toBeGreaterThanOrEqual(MIN);
              policy.published();
              last = now;
              changedSince = false;
            } else if (changedSince) {
              expect(decision).toBe('deferred');
              expect(last !== undefined && now - last < MIN).toBe(true);
            } else {
              expect(decision).toBe('unchanged');
            }
          }
        },
      ),
    );
  });
});

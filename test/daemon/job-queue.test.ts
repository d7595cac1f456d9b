import { describe, expect, it } from 'vitest';
import { JobQueue, type RunReason } from '../../src/daemon/job-queue.js';
import type { Job } from '../../src/daemon/load-jobs.js';

const job = (name: string): Job => ({
  name,
  schedule: '* * * * *',
  target: 'ndjson',
  description: '',
  file: '(inline)',
  scheduleFrom: 'declaration',
  enabled: true,
});

/** A job body the test releases by hand, recording start/end order. */
function controlledRunner() {
  const events: string[] = [];
  const release = new Map<string, () => void>();
  let active = 0;
  let maxActive = 0;
  const run = async (j: Job, reason: RunReason, signal: AbortSignal) => {
    active++;
    maxActive = Math.max(maxActive, active);
    events.push(`start ${j.name} (${reason})`);
    await new Promise<void>((resolve) => {
      release.set(j.name, resolve);
      signal.addEventListener('abort', () => {
        events.push(`abort ${j.name}`);
        resolve();
      });
    });
    events.push(`end ${j.name}`);
    active--;
  };
  const started = async (name: string) => {
    while (!release.has(name)) await new Promise((r) => setTimeout(r, 1));
    return () => {
      const r = release.get(name)!;
      release.delete(name);
      r();
    };
  };
  return { events, run, started, maxActive: () => maxActive };
}

describe('JobQueue', () => {
  it('runs jobs one at a time in the order asked, and joins a job already queued or running', async () => {
    const r = controlledRunner();
    const queue = new JobQueue(r.run);
    const a1 = queue.enqueue(job('a'), 'catch-up');
    const b = queue.enqueue(job('b'), 'schedule');
    const a2 = queue.enqueue(job('a'), 'schedule'); // running: joins
    const b2 = queue.enqueue(job('b'), 'schedule'); // queued: joins
    expect(a2).toBe(a1);
    expect(b2).toBe(b);
    expect(queue.running?.job.name).toBe('a');
    expect(queue.pending).toEqual(['b']);
    (await r.started('a'))();
    await a1;
    (await r.started('b'))();
    await b;
    await queue.idle();
    expect(r.events).toEqual(['start a (catch-up)', 'end a', 'start b (schedule)', 'end b']);
    expect(r.maxActive()).toBe(1);
    expect(queue.running).toBeUndefined();
  });

  it('on close drops queued jobs, lets the running one go on, and aborts it on request', async () => {
    const r = controlledRunner();
    const queue = new JobQueue(r.run);
    const a = queue.enqueue(job('a'), 'schedule');
    const b = queue.enqueue(job('b'), 'schedule');
    await r.started('a');
    queue.close();
    await b; // dropped: resolves without running
    await queue.enqueue(job('c'), 'schedule'); // closed: resolves at once
    expect(queue.running?.job.name).toBe('a');
    queue.abortRunning();
    await a;
    await queue.idle();
    expect(r.events).toEqual(['start a (schedule)', 'abort a', 'end a']);
  });

  it('keeps going after a job that throws', async () => {
    const ran: string[] = [];
    const queue = new JobQueue(async (j) => {
      ran.push(j.name);
      if (j.name === 'a') throw new Error('boom');
    });
    await Promise.all([queue.enqueue(job('a'), 'schedule'), queue.enqueue(job('b'), 'schedule')]);
    expect(ran).toEqual(['a', 'b']);
  });
});

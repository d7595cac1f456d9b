import stringWidth from 'string-width';
import { describe, expect, it } from 'vitest';
import { briefLine } from '../../src/util/logger.js';

const entry = (fields: Record<string, unknown>) => JSON.stringify({ time: 1, pid: 2, ...fields });

describe('the brief terminal log of sync and demo', () => {
  it('gives a warning with its error on one line, cut to the terminal width', () => {
    const line = briefLine(
      entry({
        level: 40,
        msg: 'ndjson export failed (attempt 1 of 6), retrying',
        err: {
          code: 'HTTP_STATUS',
          message: `HTTP 500 from http://127.0.0.1:1/api/v1/public/reports.ndjson: ${'x'.repeat(200)}`,
        },
      }),
      80,
    );
    expect(line.endsWith('\n')).toBe(true);
    expect(line.trimEnd().split('\n')).toHaveLength(1);
    expect(stringWidth(line.trimEnd())).toBeLessThanOrEqual(80);
    expect(line).toMatch(/^warning: ndjson export failed \(attempt 1 of 6\), retrying: HTTP 500 from /);
    expect(line.trimEnd().endsWith('…')).toBe(true);
  });

  it('leaves out what the summary prints: entries that carry an outcome (a run failed, aborted, the last word)', () => {
    expect(
      briefLine(entry({ level: 50, msg: 'run failed', outcome: 'failed', err: { message: 'x' } }), 80),
    ).toBe('');
    expect(briefLine(entry({ level: 40, msg: 'stopped by the signal', outcome: 'stopped' }), 80)).toBe('');
  });

  it('prints whole lines off a terminal width and keeps a multi-line error on one line', () => {
    const line = briefLine(entry({ level: 50, msg: 'job failed', err: { message: 'a\nb' } }), undefined);
    expect(line).toBe('error: job failed: a b\n');
  });
});

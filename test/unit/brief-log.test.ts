import stringWidth from 'string-width';
import { describe, expect, it } from 'vitest';
import { briefLine, prettyFormatter } from '../../src/util/logger.js';

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

  it('shows control characters an upstream sent as escapes, in the brief and the verbose log', () => {
    // An error body or a field name quoting terminal commands: clear the screen, set the window title.
    const hostile = 'field "\u001b[2J\u001b]0;owned\u0007" \u202eexe.txt';
    const json = entry({ level: 40, msg: `drift: ${hostile}`, err: { message: `HTTP 500: ${hostile}` } });
    // eslint-disable-next-line no-control-regex -- control characters are what the test looks for
    const acts = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
    for (const width of [undefined, 200]) {
      const line = briefLine(json, width);
      expect(line.trimEnd()).not.toMatch(acts);
      expect(line).toContain('\\u001b[2J\\u001b]0;owned\\u0007');
    }
    const stack = `Error: HTTP 500: ${hostile}\n    at read (extract.js:1:1)`;
    const withStack = entry({ level: 50, msg: hostile, err: { message: hostile, stack } });
    for (const colorize of [false, true]) {
      for (const verbose of [prettyFormatter(colorize)(json), prettyFormatter(colorize)(withStack)]) {
        // Only the formatter's own colours are left: no other escape sequence or control character.
        // eslint-disable-next-line no-control-regex -- control characters are what the test looks for
        expect(verbose.replace(/\u001b\[[0-9;]*m/g, '').trimEnd()).not.toMatch(acts);
        expect(verbose).toContain('\\u001b[2J\\u001b]0;owned\\u0007');
      }
    }
  });
});

import { describe, expect, it } from 'vitest';
import { serializeError } from '../../src/util/logger.js';
import { SyncError } from '../../src/util/errors.js';
import { useColor } from '../../src/util/status-line.js';

describe('terminal output rules', () => {
  it('colours only a terminal, NO_COLOR wins, FORCE_COLOR forces', () => {
    expect(useColor({ isTTY: true }, {})).toBe(true);
    expect(useColor({ isTTY: false }, {})).toBe(false);
    expect(useColor({}, {})).toBe(false);
    expect(useColor({ isTTY: true }, { NO_COLOR: '1' })).toBe(false);
    expect(useColor({ isTTY: true }, { NO_COLOR: '1', FORCE_COLOR: '1' })).toBe(false);
    expect(useColor({ isTTY: false }, { FORCE_COLOR: '1' })).toBe(true);
    expect(useColor({ isTTY: true }, { FORCE_COLOR: '0' })).toBe(false);
    expect(useColor({ isTTY: false }, { NO_COLOR: '' })).toBe(false);
  });

  it('serialises an error with its code, message and cause chain; a toJSON summary as it is', () => {
    const root = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' });
    const wrapped = new SyncError('HTTP_NETWORK', 'GET http://127.0.0.1:9/x failed', { cause: root });
    const json = serializeError(wrapped) as Record<string, unknown>;
    expect(json).toMatchObject({
      type: 'SyncError',
      code: 'HTTP_NETWORK',
      message: expect.stringContaining('failed'),
    });
    expect(String(json.stack)).toContain('SyncError');
    expect(JSON.stringify(json)).toContain('ECONNREFUSED');
    // The run log's summary keeps the cause too, with credentials in URLs redacted.
    const summary = new SyncError('HTTP_NETWORK', 'failed', {
      cause: new Error('fetch https://alice:pw@host/x failed', { cause: root }),
    }).toJSON();
    expect(summary.cause).toEqual({
      message: 'fetch https://[redacted]@host/x failed',
      cause: { message: 'connect ECONNREFUSED 127.0.0.1:9', code: 'ECONNREFUSED' },
    });
    expect(serializeError(summary)).toBe(summary);
  });
});

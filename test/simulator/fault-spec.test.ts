import { describe, expect, it } from 'vitest';
import { exitCodeFor } from '../../src/cli/exit-codes.js';
import { FaultSet } from '../../src/simulator/faults.js';
import { formatFaultSpec, normalizeFaults, parseFaultSpec } from '../../src/simulator/parse-fault-spec.js';

describe('parseFaultSpec', () => {
  it.each([
    [
      'ndjson:status=503,times=2,retryAfter=1',
      { endpoint: 'ndjson', kind: 'status', status: 503, times: 2, retryAfter: 1 },
    ],
    [
      'list:status=429,retryAfter=2,retryAfterForm=date',
      { endpoint: 'list', kind: 'status', status: 429, retryAfter: 2, retryAfterForm: 'date' },
    ],
    ['all:latency=200', { endpoint: 'all', kind: 'latency', ms: 200 }],
    ['ndjson:stall', { endpoint: 'ndjson', kind: 'stall' }],
    ['ndjson:reset=65536', { endpoint: 'ndjson', kind: 'reset', afterBytes: 65536 }],
    ['ndjson:malformed,at=0+7+42', { endpoint: 'ndjson', kind: 'malformed', at: [0, 7, 42] }],
    [
      'csv:csvWart=unclosedQuote,every=3',
      { endpoint: 'csv', kind: 'csvWart', wart: 'unclosedQuote', every: 3 },
    ],
    ['ndjson:giant=8000000,at=2', { endpoint: 'ndjson', kind: 'giant', bytes: 8_000_000, at: [2] }],
    [
      'ndjson:redirect=cross,to=http://127.0.0.1:5001',
      { endpoint: 'ndjson', kind: 'redirect', target: 'crossOrigin', to: 'http://127.0.0.1:5001' },
    ],
    ['csv:ignorePage', { endpoint: 'csv', kind: 'ignorePage' }],
  ])('parses %s', (spec, expected) => {
    const fault = parseFaultSpec(spec);
    expect(fault).toEqual(expected);
    expect(parseFaultSpec(formatFaultSpec(fault))).toEqual(fault);
  });

  it.each([
    ['status=503', 'expected <endpoint>:<kind>'],
    ['ndjson:explode', 'unknown kind "explode"'],
    ['web:latency=5', 'endpoint'],
    ['ndjson:latency=fast', 'ms'],
    ['list:malformed', 'malformed applies to ndjson'],
    ['ndjson:status=503,times=0', 'times'],
    ['ndjson:redirect=crossOrigin', 'needs `to`'],
    ['ndjson:regenerate=1', 'takes no value'],
    ['ndjson:status=503,colour=red', 'colour'],
  ])('refuses %s with a clear message and exit code 2', (spec, fragment) => {
    expect(() => parseFaultSpec(spec)).toThrow(fragment);
    try {
      parseFaultSpec(spec);
    } catch (err) {
      expect(err).toMatchObject({ code: 'FAULT_SPEC_INVALID' });
      expect(exitCodeFor(err)).toBe(2);
    }
  });
});

describe('FaultSet', () => {
  it('applies a fault to the first `times` matching requests only, endpoint by endpoint', () => {
    const set = new FaultSet(normalizeFaults(['ndjson:status=503,times=2', 'all:latency=5']));
    expect(set.take('list', 'status')).toEqual([]);
    expect(set.take('ndjson', 'status')).toHaveLength(1);
    expect(set.take('ndjson', 'status')).toHaveLength(1);
    expect(set.take('ndjson', 'status')).toEqual([]);
    expect(set.take('stats', 'latency')).toHaveLength(1);
    expect(set.list().map((f) => f.used)).toEqual([2, 1]);
  });

  it('skips endpoints where a kind cannot apply, even for `all`', () => {
    const set = new FaultSet(normalizeFaults(['all:malformed=2']));
    expect(set.take('list', 'malformed')).toEqual([]);
    expect(set.take('ndjson', 'malformed')).toHaveLength(1);
  });
});

describe('paging fault switches', () => {
  it('parses and formats noValidators, capPageSize and emptyPage', () => {
    expect(parseFaultSpec('csv:noValidators')).toEqual({ endpoint: 'csv', kind: 'noValidators' });
    expect(parseFaultSpec('csv:capPageSize=50')).toEqual({ endpoint: 'csv', kind: 'capPageSize', rows: 50 });
    const empty = parseFaultSpec('csv:emptyPage=2+5');
    expect(empty).toEqual({ endpoint: 'csv', kind: 'emptyPage', at: [2, 5] });
    expect(formatFaultSpec(empty)).toBe('csv:emptyPage=2+5');
    expect(() => parseFaultSpec('list:capPageSize=5')).toThrow(/applies to csv/);
  });
});

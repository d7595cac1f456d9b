import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { flattenStats, metricKeys, statsTotal } from '../../src/schema/flatten-stats.js';

describe('flattenStats', () => {
  it('flattens every numeric leaf of any shape into dotted metrics, skipping text, booleans and nulls', () => {
    const body = {
      total: 7,
      byStatus: { SUBMITTED: 5, IN_PROGRESS: 2 },
      series: [{ day: '2024-03-01', n: 3 }, { n: 4 }],
      meta: { label: 'x', ok: true, missing: null },
      'odd.key': 1,
    };
    expect(flattenStats(body)).toEqual([
      { metric: 'total', value: 7 },
      { metric: 'byStatus.SUBMITTED', value: 5 },
      { metric: 'byStatus.IN_PROGRESS', value: 2 },
      { metric: 'series.0.n', value: 3 },
      { metric: 'series.1.n', value: 4 },
      { metric: '["odd.key"]', value: 1 },
    ]);
  });

  it('names a bare number `$` and gives nothing for text', () => {
    expect(flattenStats(42)).toEqual([{ metric: '$', value: 42 }]);
    expect(flattenStats('42')).toEqual([]);
    // A key `$` at the root is no bare number: it is named in brackets, and found there.
    expect(flattenStats({ $: 0, a: { $: 1 } })).toEqual([
      { metric: '["$"]', value: 0 },
      { metric: 'a.$', value: 1 },
    ]);
    expect(statsTotal({ $: 5 }, '["$"]')).toBe(5);
  });

  it('reads the total at its path only when it is a count (an integer, or its digits as text)', () => {
    expect(statsTotal({ total: 3 })).toBe(3);
    expect(statsTotal({ total: '6405' })).toBe(6405);
    for (const total of ['3.5', '-1', ' 3', '', 3.5, -1, true, null, 1e300]) {
      expect(statsTotal({ total }), JSON.stringify(total)).toBeUndefined();
    }
    expect(statsTotal([3])).toBeUndefined();
    expect(statsTotal(null)).toBeUndefined();
    expect(statsTotal({ data: { count: 12 } }, 'data.count')).toBe(12);
    expect(statsTotal({ data: [{ count: 12 }] }, 'data.count')).toBeUndefined();
    expect(statsTotal({ count: 12 })).toBeUndefined();
    expect(statsTotal({ count: 12 }, 'count')).toBe(12);
    // Inherited keys are no counters.
    expect(statsTotal({}, 'constructor')).toBeUndefined();
  });
});

describe('statsTotal at a metric name', () => {
  it('finds every count flattenStats names, whatever the keys and arrays around it (property)', () => {
    const key = fc.oneof(
      fc.constantFrom('total', 'a.b', '', '[x]', 'say "hi"', '0', 'count', '$'),
      fc.string({ maxLength: 5 }),
    );
    const tree = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: 'small' },
        fc.nat({ max: 10_000 }),
        fc.dictionary(key, tie('node'), { maxKeys: 3 }),
        fc.array(tie('node'), { maxLength: 3 }),
      ),
    })).node;
    fc.assert(
      fc.property(tree, (body) => {
        for (const { metric, value } of flattenStats(body)) {
          expect(metricKeys(metric), metric).toBeDefined();
          expect(statsTotal(body, metric), metric).toBe(value);
        }
      }),
      { numRuns: 2_000 },
    );
  });

  it('reads a count in an array or under a key holding a dot', () => {
    expect(statsTotal([{ service_requests: 999 }], '0.service_requests')).toBe(999);
    expect(statsTotal({ 'reports.total': '6405' }, '["reports.total"]')).toBe(6405);
    expect(statsTotal({ a: [1, 2] }, 'a.1')).toBe(2);
    expect(statsTotal({ a: [1, 2] }, 'a.x')).toBeUndefined();
    for (const bad of ['a..b', '.a', 'a.', '["unclosed', 'a["b"]x'])
      expect(metricKeys(bad), bad).toBeUndefined();
  });
});

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { computeStats, statsOfGroups } from '../../src/schema/stats.js';

describe('statsOfGroups', () => {
  it('gives the body computeStats gives for the same reports counted one by one (keys, counts, key order)', () => {
    const code = fc.oneof(fc.constantFrom('SUBMITTED', 'RESOLVED', '__proto__', 'b', 'a', 'É'), fc.string());
    const group = fc.record({ status: code, destination: code, n: fc.nat({ max: 20 }) });
    fc.assert(
      fc.property(fc.array(group, { maxLength: 12 }), (groups) => {
        const reports = groups.flatMap((g) => Array.from({ length: g.n }, () => g));
        const expected = computeStats(reports);
        const got = statsOfGroups(groups);
        expect(got).toEqual(expected);
        expect(JSON.stringify(got)).toBe(JSON.stringify(expected));
      }),
    );
  });
});

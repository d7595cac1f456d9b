import { describe, expect, it } from 'vitest';
import { autoMemoryLimit, autoReadMemoryLimit } from '../../src/config/machine-memory.js';

const GiB = 2 ** 30;

describe('the automatic DuckDB limits follow the memory of the machine or container', () => {
  it('gives the merge an eighth, from 128MiB to 512MiB', () => {
    expect([0.5, 1, 2, 3, 4, 24].map((g) => autoMemoryLimit(g * GiB))).toEqual([
      '128MiB',
      '128MiB',
      '256MiB',
      '384MiB',
      '512MiB',
      '512MiB',
    ]);
  });

  it('gives reading a sixteenth, from 128MiB to 256MiB, never above the merge', () => {
    for (const g of [0.5, 1, 2, 3, 4, 24]) {
      const read = autoReadMemoryLimit(g * GiB);
      expect(parseInt(read, 10)).toBeLessThanOrEqual(parseInt(autoMemoryLimit(g * GiB), 10));
    }
    expect([1, 2, 4, 24].map((g) => autoReadMemoryLimit(g * GiB))).toEqual([
      '128MiB',
      '128MiB',
      '256MiB',
      '256MiB',
    ]);
  });
});

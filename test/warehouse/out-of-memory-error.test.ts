import { afterEach, describe, expect, it, vi } from 'vitest';
import { outOfMemoryError } from '../../src/warehouse/out-of-memory-error.js';

const duckdbError = (used: string, limit: string) =>
  new Error(`Out of Memory Error: could not allocate block of size 256.0 KiB (${used}/${limit} used)`);

describe('the advice of WAREHOUSE_OUT_OF_MEMORY names the limit the run was held to', () => {
  const base = { warehousePath: '/w/w.duckdb' };

  it('names the reading limit when DuckDB reports its value', () => {
    const err = outOfMemoryError(duckdbError('127.8 MiB', '128.0 MiB'), {
      ...base,
      memoryLimit: '512MiB',
      readMemoryLimit: '128MiB',
      phase: 'reading',
    });
    expect(err?.context).toMatchObject({ setting: 'REPORTS_DUCKDB_READ_MEMORY_LIMIT', phase: 'reading' });
  });

  it('names the merge limit when DuckDB reports its value', () => {
    const err = outOfMemoryError(duckdbError('511.8 MiB', '512.0 MiB'), {
      ...base,
      memoryLimit: '512MiB',
      readMemoryLimit: '256MiB',
      phase: 'merging',
    });
    expect(err?.message).toMatch(/while merging the run .*Set REPORTS_DUCKDB_MEMORY_LIMIT higher/);
  });

  // A 1 GiB container gets 128MiB for both, and the daemon reads at the merge's limit: reading runs at the
  // lower of the two, so raising the reading one alone would change nothing.
  it('with both limits alike, names the merge limit, and both while reading', () => {
    const limits = { ...base, memoryLimit: '128MiB', readMemoryLimit: '128MiB' };
    const oom = duckdbError('127.8 MiB', '128.0 MiB');
    const merging = outOfMemoryError(oom, { ...limits, phase: 'merging' });
    expect(merging?.message).toMatch(/while merging the run .*Set REPORTS_DUCKDB_MEMORY_LIMIT higher/);
    expect(merging?.message).not.toContain('READ_MEMORY_LIMIT');
    const reading = outOfMemoryError(oom, { ...limits, phase: 'reading' });
    expect(reading?.message).toMatch(
      /while staging the export .*Set REPORTS_DUCKDB_MEMORY_LIMIT and REPORTS_DUCKDB_READ_MEMORY_LIMIT higher \(e\.g\. REPORTS_DUCKDB_MEMORY_LIMIT=\d+MiB REPORTS_DUCKDB_READ_MEMORY_LIMIT=\d+MiB\)/,
    );
    expect(reading?.context).toMatchObject({ setting: 'REPORTS_DUCKDB_MEMORY_LIMIT' });
  });

  it('while publishing: names the merge limit and says the previous snapshot stays', () => {
    const err = outOfMemoryError(duckdbError('127.9 MiB', '128.0 MiB'), {
      ...base,
      memoryLimit: '128MiB',
      readMemoryLimit: '',
      phase: 'publishing',
    });
    expect(err?.message).toMatch(
      /while publishing the snapshot .*REPORTS_DUCKDB_MEMORY_LIMIT=256MiB.*The previous snapshot is unchanged\.$/,
    );
  });

  describe('the value to try', () => {
    afterEach(() => vi.restoreAllMocks());

    // A 2 GiB container on a large machine: 512MiB is a quarter of what the process may use.
    it('stays within a quarter of the container memory, not the machine', () => {
      vi.spyOn(process, 'constrainedMemory').mockReturnValue(2 * 2 ** 30);
      const err = outOfMemoryError(duckdbError('383.8 MiB', '384.0 MiB'), {
        ...base,
        memoryLimit: '384MiB',
        readMemoryLimit: '128MiB',
        phase: 'merging',
      });
      expect(err?.context).toMatchObject({ suggested: '512MiB' });
    });

    it('is twice the limit when the memory allows it', () => {
      vi.spyOn(process, 'constrainedMemory').mockReturnValue(16 * 2 ** 30);
      const err = outOfMemoryError(duckdbError('255.8 MiB', '256.0 MiB'), {
        ...base,
        memoryLimit: '256MiB',
        readMemoryLimit: '128MiB',
        phase: 'merging',
      });
      expect(err?.context).toMatchObject({ suggested: '512MiB' });
    });
  });

  it('leaves any other error alone', () => {
    expect(
      outOfMemoryError(new Error('Constraint Error: duplicate key'), {
        ...base,
        memoryLimit: '1GB',
        readMemoryLimit: '1GB',
      }),
    ).toBeUndefined();
  });
});

import { describe, expect, it } from 'vitest';
import { exitCodeFor } from '../../src/cli/exit-codes.js';
import { SyncError } from '../../src/util/errors.js';
import { warehouseWriteError } from '../../src/warehouse/warehouse-write-error.js';

// The messages are DuckDB's own, as measured under `ulimit -f` and on a full tmpfs (test/reliability/disk.test.ts
// runs the first kind end to end; the invalidated form needs a checkpoint to fail, which depends on DuckDB's
// WAL sizes, so it is pinned here).
describe('warehouseWriteError', () => {
  const path = '/data/warehouse.duckdb';

  it('names the file, the cause and what to do for a failed WAL write', () => {
    const err = warehouseWriteError(
      new Error(
        'TransactionContext Error: Failed to commit: Could not write file "/data/warehouse.duckdb.wal": No space left on device',
      ),
      path,
    );
    expect(err).toBeInstanceOf(SyncError);
    expect(err?.code).toBe('WAREHOUSE_WRITE');
    expect(exitCodeFor(err)).toBe(1);
    expect(err?.retryable).toBe(false);
    expect(err?.message).toContain(`Cannot write the warehouse ${path}: TransactionContext Error`);
    expect(err?.message).toContain('No space left on device');
    expect(err?.message).toContain('free space or fix the permissions');
  });

  it('quotes the original error of a database invalidated by a failed checkpoint', () => {
    const err = warehouseWriteError(
      new Error(
        'FATAL Error: Failed: database has been invalidated because of a previous fatal error. The database must be restarted prior to being used again.\n' +
          'Original error: "Failed to create checkpoint because of error: Could not write file "/data/warehouse.duckdb": File too large"',
      ),
      path,
    );
    expect(err?.message).toContain(
      'Failed to create checkpoint because of error: Could not write file "/data/warehouse.duckdb": File too large',
    );
    expect(err?.message).not.toContain('FATAL');
  });

  it('leaves other errors alone', () => {
    expect(warehouseWriteError(new Error('Binder Error: column "x" not found'), path)).toBeUndefined();
    expect(warehouseWriteError(new SyncError('HTTP_STATUS', 'HTTP 503'), path)).toBeUndefined();
  });
});

import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { withQueryTimeout } from '../../src/reader/query-timeout.js';
import { SyncError } from '../../src/util/errors.js';

describe('withQueryTimeout', () => {
  it('interrupts a query that runs past the limit with READER_QUERY_TIMEOUT, and lets a quick one through', async () => {
    const instance = await DuckDBInstance.create(':memory:', { threads: '1' });
    const connection = await instance.connect();
    try {
      // Far more rows than anything can count in the limit: it only ends by the interrupt.
      const slow = withQueryTimeout(connection, 100, 'The test query', () =>
        connection.runAndReadAll('SELECT count(*) FROM range(1000000000000) a WHERE a.range % 7 = 3'),
      );
      await expect(slow).rejects.toBeInstanceOf(SyncError);
      await expect(slow).rejects.toMatchObject({ code: 'READER_QUERY_TIMEOUT', retryable: true });
      await expect(slow).rejects.toThrow(
        /The test query took longer than 100 ms .*REPORTS_READER_QUERY_TIMEOUT_MS/,
      );
      const fast = await withQueryTimeout(connection, 10_000, 'A quick query', () =>
        connection.runAndReadAll('SELECT 42 AS n'),
      );
      expect(fast.getRowObjectsJS()).toEqual([{ n: 42 }]);
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
  });

  it('passes other query errors through unchanged', async () => {
    const instance = await DuckDBInstance.create(':memory:');
    const connection = await instance.connect();
    try {
      await expect(
        withQueryTimeout(connection, 10_000, 'x', () => connection.run('SELECT * FROM no_such_table')),
      ).rejects.toThrow(/no_such_table/);
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
  });
});

import type { DuckDBConnection } from '@duckdb/node-api';

/**
 * `reader_extra_keys` (migration 030): every key of the current reports' `extra` with the place it first
 * appears along the CSV export order (the report's `created_at`, `id`, then the key's position in the
 * report), so the CSV endpoint's header needs no scan of every `extra` (docs/reader.md).
 */

/** Keys of `extra` with their place, for the reports `where` selects (a clause on `report_rows`). */
function keyPlacesSql(where: string): string {
  // Unnested in the select list, never by a lateral join (which repeats the whole row, its `extra`
  // included, once per key); no window or sort over the rows: memory follows the distinct keys.
  return `SELECT key, min({'c': created_at, 'i': id, 'p': pos}) AS first
    FROM (SELECT created_at, id, unnest(json_keys(extra)) AS key,
                 generate_subscripts(json_keys(extra), 1)::BIGINT AS pos
          FROM report_rows WHERE removed_at IS NULL AND extra IS NOT NULL AND (${where}))
    GROUP BY key`;
}

const STORED = `{'c': k.first_created_at, 'i': k.first_id, 'p': k.first_pos}`;

/** Reads every current report's keys again. Call inside the caller's transaction. */
export async function rebuildExtraKeys(c: DuckDBConnection): Promise<void> {
  await c.run('DELETE FROM reader_extra_keys');
  await c.run(
    `INSERT INTO reader_extra_keys
     SELECT key, first.c, first.i, first.p FROM (${keyPlacesSql('true')})`,
  );
}

/**
 * Applies a run's changed reports (`last_changed_at = now`) to the keys. A key's first place can only
 * move earlier through a changed report, which the run's own keys give; it moves later or disappears
 * only when the report holding it changed and no changed report holds it at or before that place: only
 * those keys are read again from every report (rare: that report was removed or lost the key).
 */
export async function updateExtraKeys(c: DuckDBConnection, now: string): Promise<void> {
  const params = { now };
  const changed = `last_changed_at = $now::TIMESTAMPTZ`;
  await c.run(`CREATE OR REPLACE TEMP TABLE serving_key_firsts AS ${keyPlacesSql(changed)}`, params);
  await c.run(
    `CREATE OR REPLACE TEMP TABLE serving_key_suspects AS
     SELECT k.key FROM reader_extra_keys k LEFT JOIN serving_key_firsts f ON f.key = k.key
     WHERE k.first_id IN (SELECT id FROM report_rows WHERE ${changed})
       AND (f.first IS NULL OR f.first > ${STORED})`,
    params,
  );
  await c.run(
    `MERGE INTO reader_extra_keys k USING serving_key_firsts f ON k.key = f.key
     WHEN MATCHED AND f.first < ${STORED} THEN
       UPDATE SET first_created_at = f.first.c, first_id = f.first.i, first_pos = f.first.p
     WHEN NOT MATCHED THEN INSERT VALUES (f.key, f.first.c, f.first.i, f.first.p)`,
  );
  const suspects = (
    await c.runAndReadAll('SELECT count(*)::DOUBLE FROM serving_key_suspects')
  ).getRows()[0]?.[0];
  if (Number(suspects) > 0) {
    await c.run('DELETE FROM reader_extra_keys WHERE key IN (SELECT key FROM serving_key_suspects)');
    await c.run(
      `INSERT INTO reader_extra_keys
       SELECT key, first.c, first.i, first.p FROM (${keyPlacesSql('true')})
       WHERE key IN (SELECT key FROM serving_key_suspects)`,
    );
  }
  await c.run('DROP TABLE serving_key_firsts');
  await c.run('DROP TABLE serving_key_suspects');
}

/** The extra columns in first-seen order (the CSV header after the known columns). */
export async function readExtraKeys(c: DuckDBConnection): Promise<string[]> {
  const reader = await c.runAndReadAll(
    'SELECT key FROM reader_extra_keys ORDER BY first_created_at, first_id, first_pos',
  );
  return reader.getRows().map((row) => String(row[0]));
}

import type { FastifyReply, FastifyRequest } from 'fastify';
import type pg from 'pg';
import { replyNotModified, type Validators } from '../validators.js';
import type { PgReaderPool } from './pg-pool.js';
import { pgValidators, type PgReaderQueries } from './pg-queries.js';

/** One REPEATABLE READ, read-only transaction and the validators of the published state it sees. */
export interface PgSnapshot {
  client: pg.PoolClient;
  tx: { finish(ok: boolean): Promise<void> };
  validators: Validators;
}

/**
 * Opens a snapshot for an answer read with several statements (exports, stats): every statement of it
 * sees the same published state, whose `publish_state` row gives the validators (so a reader during a
 * publish sees the run before or after, never half of it). Answers `304` itself and returns null when the
 * client's copy is current. `tx.finish` ends the transaction and gives the connection back.
 *
 * @throws SyncError `READER_BUSY` / `READER_QUERY_TIMEOUT` / `READER_POSTGRES_UNAVAILABLE`
 */
export async function openPgSnapshot(
  pool: PgReaderPool,
  queries: PgReaderQueries,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<PgSnapshot | null> {
  const lease = await pool.lease();
  const { client } = lease;
  let done = false;
  const tx = {
    async finish(ok: boolean): Promise<void> {
      if (done) return;
      done = true;
      try {
        await client.query(ok ? 'COMMIT' : 'ROLLBACK');
        lease.release();
      } catch (err) {
        lease.release(err);
      }
    },
  };
  let validators: Validators;
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    validators = pgValidators(await queries.state(client));
  } catch (err) {
    await tx.finish(false);
    throw err;
  }
  if (replyNotModified(request, reply, validators)) {
    await tx.finish(true);
    return null;
  }
  return { client, tx, validators };
}

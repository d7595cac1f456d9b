import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { redactSecrets } from '../../util/redact.js';

/**
 * What the last PostgreSQL publishes of a warehouse did, kept in a small JSON file beside it
 * (`<warehouse>.postgres.json`), so `reports-sync status` (another process) and the daemon's `/metrics`
 * show the publish lag and the last error (docs/deployment.md, "Serving from PostgreSQL"). Times are
 * ISO 8601 (UTC); `lastError` is redacted (no password).
 */
export interface PublishRecord {
  /** The run applied by the last publish that committed (`publish_state.last_run_id`), null when none. */
  lastRunId: string | null;
  /** When the last publish that committed finished; null when none did. */
  lastSuccessAt: string | null;
  /** When the last publish was tried, whatever its outcome. */
  lastAttemptAt: string | null;
  /** The last attempt's error (SyncError message), null when it succeeded. */
  lastError: string | null;
}

/** The record file of the warehouse at `warehousePath`. */
export function publishRecordPath(warehousePath: string): string {
  return `${warehousePath}.postgres.json`;
}

/** The record, or undefined when no publish was ever tried (or the file is unreadable). */
export function readPublishRecord(warehousePath: string): PublishRecord | undefined {
  try {
    const parsed = JSON.parse(
      readFileSync(publishRecordPath(warehousePath), 'utf8'),
    ) as Partial<PublishRecord>;
    return {
      lastRunId: parsed.lastRunId ?? null,
      lastSuccessAt: parsed.lastSuccessAt ?? null,
      lastAttemptAt: parsed.lastAttemptAt ?? null,
      lastError: parsed.lastError ?? null,
    };
  } catch {
    return undefined;
  }
}

/**
 * Notes an attempt: `outcome` the run applied on success, or the error. Written to a temporary file then
 * renamed, so a reader never sees half a record. A failure to write is ignored (the record is a
 * convenience: PostgreSQL's `publish_state` is the truth).
 */
export function notePublish(
  warehousePath: string,
  outcome: { ok: true; lastRunId: string | null } | { ok: false; error: string },
  now = new Date(),
): void {
  const before = readPublishRecord(warehousePath);
  const at = now.toISOString();
  const record: PublishRecord = outcome.ok
    ? { lastRunId: outcome.lastRunId, lastSuccessAt: at, lastAttemptAt: at, lastError: null }
    : {
        lastRunId: before?.lastRunId ?? null,
        lastSuccessAt: before?.lastSuccessAt ?? null,
        lastAttemptAt: at,
        lastError: redactSecrets(outcome.error),
      };
  const path = publishRecordPath(warehousePath);
  try {
    writeFileSync(`${path}.tmp`, `${JSON.stringify(record, null, 2)}\n`);
    renameSync(`${path}.tmp`, path);
  } catch {
    // A read-only folder: the log has the outcome.
  }
}

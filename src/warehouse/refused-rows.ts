import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { RecordLocation } from '../extract/record.js';
import { RECORD_ISSUE_CODES } from '../schema/record-issue.js';
import { errorMessage } from '../util/errors.js';
import type { Reject } from '../normalize/reject.js';
import { withRollback } from './transaction.js';

/** Most single-row probes one batch may take before the refusal is taken for systematic (the run fails). */
const MAX_PROBES = 2_000;

/**
 * Thrown by a batch commit when DuckDB refused the batch file of staged rows (a value the validator let
 * through but a column cannot hold: a Conversion Error, a malformed JSON line). The batch is rolled back;
 * the writer then finds the refused rows with {@link findRefusedRows}.
 */
export class StagedRowsRefused extends Error {
  constructor(override readonly cause: unknown) {
    super(errorMessage(cause));
  }
}

/** The rows of a batch file DuckDB refuses: their line indexes and the file without them. */
export interface RefusedRows {
  /** The refused lines as quarantine entries (location, the staged report, DuckDB's error as the reason). */
  rejects: Reject[];
  /** The batch file's lines that load, each ending with `\n`. */
  kept: string[];
}

/**
 * Bisects a refused batch file down to the lines DuckDB refuses (belt and braces behind the validator: one
 * bad value must never fail a run). `load(path)` loads one file into staging inside a transaction this
 * function rolls back, so only the verdict is kept. Halves that load are cleared whole; a refused half is
 * split again, down to single lines. Returns `undefined` when no single line is refused (the failure was
 * not about the values: the caller rethrows it) or past {@link MAX_PROBES} probes (too many rows refused
 * to be a few bad values).
 */
export async function findRefusedRows(
  connection: DuckDBConnection,
  path: string,
  load: (path: string) => Promise<unknown>,
): Promise<RefusedRows | undefined> {
  const lines = readFileSync(path, 'utf8').split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  const probe = `${path}.probe`;
  const refused = new Map<number, string>();
  const stack: Array<[number, number]> = [[0, lines.length]];
  let probes = 0;
  try {
    while (stack.length > 0) {
      const [lo, hi] = stack.pop()!;
      if (++probes > MAX_PROBES) return undefined;
      writeFileSync(probe, lines.slice(lo, hi).join('\n') + '\n');
      const error = await tryLoad(connection, () => load(probe));
      if (error === undefined) continue;
      if (hi - lo === 1) refused.set(lo, error);
      else {
        const mid = lo + Math.floor((hi - lo) / 2);
        stack.push([mid, hi], [lo, mid]);
      }
    }
  } finally {
    rmSync(probe, { force: true });
  }
  if (refused.size === 0) return undefined;
  const rejects: Reject[] = [];
  const kept: string[] = [];
  lines.forEach((line, i) => {
    const reason = refused.get(i);
    if (reason === undefined) kept.push(`${line}\n`);
    else rejects.push(refusedReject(line, reason));
  });
  return { rejects, kept };
}

async function tryLoad(
  connection: DuckDBConnection,
  load: () => Promise<unknown>,
): Promise<string | undefined> {
  return withRollback(connection, async () => {
    try {
      await load();
      return undefined;
    } catch (err) {
      return errorMessage(err);
    }
  });
}

/** The quarantine entry of one refused batch line (`{"s","l","h","lh","x","r"}`, see staged-line.ts). */
function refusedReject(line: string, reason: string): Reject {
  let location: RecordLocation = { line: 0 };
  let raw = line;
  let recordId: string | undefined;
  try {
    const staged = JSON.parse(line) as { l?: string; r?: { id?: unknown } };
    location = parseLocation(staged.l ?? '');
    raw = JSON.stringify(staged.r);
    recordId = typeof staged.r?.id === 'string' ? staged.r.id : undefined;
  } catch {
    // a line DuckDB cannot read may not parse here either: kept whole as its raw text
  }
  return {
    location,
    raw,
    recordId,
    issues: [
      {
        path: '',
        message: `the warehouse refused the record: ${reason.split('\n')[0]}`,
        code: RECORD_ISSUE_CODES.warehouseRefused,
      },
    ],
  };
}

/** The inverse of `formatLocation` (`page 3, row 17, line 40`). */
function parseLocation(text: string): RecordLocation {
  const m = /^(?:page (\d+), )?(?:row (\d+), )?line (\d+)$/.exec(text);
  if (!m) return { line: 0 };
  return {
    line: Number(m[3]),
    ...(m[1] === undefined ? {} : { page: Number(m[1]) }),
    ...(m[2] === undefined ? {} : { row: Number(m[2]) }),
  };
}

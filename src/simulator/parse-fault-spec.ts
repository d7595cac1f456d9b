import { SyncError } from '../util/errors.js';
import { checkFaultSpec, type FaultKind, type FaultSpec } from './faults.js';

/** The field that the value after `kind=` fills, per kind (`latency=200` → `ms: 200`). */
const MAIN_FIELD: Record<FaultKind, string | null> = {
  latency: 'ms',
  stall: 'afterBytes',
  status: 'status',
  reset: 'afterBytes',
  cut: 'afterBytes',
  chunkedCut: 'afterBytes',
  malformed: 'every',
  csvWart: 'wart',
  giant: 'bytes',
  duplicates: 'every',
  redirect: 'target',
  regenerate: null,
  ignorePage: null,
  noValidators: null,
  capPageSize: 'rows',
  emptyPage: 'at',
};

const NUMERIC = new Set([
  'ms',
  'afterBytes',
  'status',
  'retryAfter',
  'every',
  'bytes',
  'times',
  'code',
  'rows',
]);
const ALIASES: Record<string, string> = { cross: 'crossOrigin', 'cross-origin': 'crossOrigin' };

/**
 * Parses the compact fault syntax of `reports-sync simulate --fault`:
 *
 * ```
 * <endpoint>:<kind>[=<value>][,<option>=<value>]...
 * ```
 *
 * `endpoint` is `ndjson`, `csv`, `list`, `geojson`, `stats` or `all`; the value after the kind fills its
 * main field; `times=N` limits the fault to the first N requests it applies to; `at` takes positions joined
 * by `+`. Examples:
 *
 * ```
 * ndjson:status=503,times=2,retryAfter=1        list:status=429,retryAfter=2,retryAfterForm=date
 * all:latency=200                               ndjson:stall  |  ndjson:stall=4096
 * ndjson:reset=65536     ndjson:cut=10000       csv:chunkedCut=5000
 * ndjson:malformed=100   ndjson:malformed,at=0+7+42
 * csv:csvWart=unclosedQuote,at=3                csv:csvWart=bom
 * ndjson:giant=8000000,at=2                     ndjson:duplicates=5
 * ndjson:redirect=loop   csv:redirect=login     ndjson:redirect=crossOrigin,to=http://127.0.0.1:5001 (or to=5001)
 * ndjson:regenerate      csv:ignorePage
 * csv:noValidators       csv:capPageSize=50        csv:emptyPage=2+5
 * ```
 *
 * @throws SyncError `FAULT_SPEC_INVALID` (exit 2) naming the spec and what is wrong
 */
export function parseFaultSpec(spec: string): FaultSpec {
  const fail = (why: string): never => {
    throw new SyncError('FAULT_SPEC_INVALID', `Invalid fault ${JSON.stringify(spec)}: ${why}`, {
      context: { spec },
    });
  };
  const colon = spec.indexOf(':');
  if (colon <= 0)
    fail('expected <endpoint>:<kind>[=<value>][,<option>=<value>]..., e.g. ndjson:status=503,times=2');
  const endpoint = spec.slice(0, colon).trim();
  const [head = '', ...options] = spec.slice(colon + 1).split(',');
  const [kind = '', mainValue] = splitPair(head);
  if (!(kind in MAIN_FIELD))
    fail(`unknown kind ${JSON.stringify(kind)} (known: ${Object.keys(MAIN_FIELD).join(', ')})`);
  const raw: Record<string, unknown> = { endpoint, kind };
  const main = MAIN_FIELD[kind as FaultKind];
  if (mainValue !== undefined) {
    if (main === null) fail(`${kind} takes no value`);
    else raw[main] = convert(main, mainValue);
  }
  for (const option of options) {
    const [key = '', value] = splitPair(option);
    if (key === '') continue;
    if (value === undefined) fail(`option ${JSON.stringify(key)} needs a value (${key}=...)`);
    else raw[key] = convert(key, value);
  }
  const checked = checkFaultSpec(raw);
  if (!checked.ok) fail(checked.message);
  return (checked as { ok: true; fault: FaultSpec }).fault;
}

function splitPair(text: string): [string, string | undefined] {
  const eq = text.indexOf('=');
  return eq < 0 ? [text.trim(), undefined] : [text.slice(0, eq).trim(), text.slice(eq + 1).trim()];
}

function convert(key: string, value: string): unknown {
  if (key === 'at') return value.split('+').map(toNumber);
  if (NUMERIC.has(key)) return toNumber(value);
  return ALIASES[value] ?? value;
}

// Non-numbers are passed on as text, so the schema reports them ("expected number, received string").
function toNumber(value: string): unknown {
  return /^\d+$/.test(value) ? Number(value) : value;
}

/** The compact form of a fault (the inverse of {@link parseFaultSpec}), for logs and listings. */
export function formatFaultSpec(fault: FaultSpec): string {
  const { endpoint, kind, ...rest } = fault as FaultSpec & Record<string, unknown>;
  const fields = rest as Record<string, unknown>;
  const main = MAIN_FIELD[kind];
  const show = (value: unknown) => (Array.isArray(value) ? value.join('+') : String(value));
  const parts = [main !== null && fields[main] !== undefined ? `${kind}=${show(fields[main])}` : kind];
  for (const [key, value] of Object.entries(fields)) {
    if (key === main || value === undefined) continue;
    parts.push(`${key}=${show(value)}`);
  }
  return `${endpoint}:${parts.join(',')}`;
}

/**
 * Turns faults given as compact strings or JSON objects into checked {@link FaultSpec}s (what
 * `setFaults` and `POST /__admin/faults` accept).
 *
 * @throws SyncError `FAULT_SPEC_INVALID` (exit 2) naming the first bad item
 */
export function normalizeFaults(items: ReadonlyArray<FaultSpec | string>): FaultSpec[] {
  return items.map((item, i) => {
    if (typeof item === 'string') return parseFaultSpec(item);
    const checked = checkFaultSpec(item);
    if (!checked.ok) {
      throw new SyncError(
        'FAULT_SPEC_INVALID',
        `Invalid fault #${i + 1} ${JSON.stringify(item)}: ${checked.message}`,
        { context: { index: i } },
      );
    }
    return checked.fault;
  });
}

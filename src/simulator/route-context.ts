import type { IncomingMessage, ServerResponse } from 'node:http';
import { PUBLIC_PREFIX } from '../schema/public-query.js';
import type { DeliveryFaults } from './body-sink.js';
import type { DatasetSnapshot } from './dataset-snapshot.js';
import type { FaultOf } from './faults.js';
import type { RecordFaults } from './record-faults.js';
import { validatorsOf, type Validators } from './respond.js';

/** Where `GET /reports.csv` redirects to: the "file's real location" (docs/upstream-contract.md: "Clients may need to follow an HTTP redirect"). */
export const CSV_EXPORT_PATH = `${PUBLIC_PREFIX}/exports/reports.csv`;
/** The HTML sign-in page the `redirect=login` fault sends clients to. */
export const LOGIN_PATH = '/login';
/** The hop of the `redirect=loop` fault: it redirects back to its `to` parameter. */
export const LOOP_PATH = `${PUBLIC_PREFIX}/redirect-loop`;

/** Every fault that shapes one response body (taken from the fault set for this request). */
export interface BodyFaults extends DeliveryFaults, RecordFaults {
  csvWarts: ReadonlyArray<FaultOf<'csvWart'>>;
  ignorePage: boolean;
  regenerate: boolean;
  /** Send no `ETag`/`Last-Modified` (the `noValidators` fault). */
  noValidators: boolean;
  /** Rows per CSV page at most (the `capPageSize` fault). */
  capPageSize?: number | undefined;
  /** CSV pages answered header-only (the `emptyPage` fault). */
  emptyPages: readonly number[];
}

/** No body faults. */
export const NO_BODY_FAULTS: BodyFaults = {
  malformed: [],
  giant: [],
  csvWarts: [],
  ignorePage: false,
  regenerate: false,
  noValidators: false,
  emptyPages: [],
};

/** What a route handler gets for one request. */
export interface RouteContext {
  req: IncomingMessage;
  res: ServerResponse;
  /** The request URL, absolute, on the origin the client addressed (its `Host` header). */
  url: URL;
  /** The data state this request reads, taken once when the request is served. */
  data: DatasetSnapshot;
  /** `HEAD`: headers only. */
  head: boolean;
  faults: BodyFaults;
  /** 0, or the number of the regenerated export this request sees (the `regenerate` fault). */
  regeneration: number;
  /** Folder where the NDJSON export and CSV pages of a data state are kept once generated (serve-ndjson.ts, serve-csv.ts). */
  exportCacheDir?: string | undefined;
}

/**
 * `ETag`/`Last-Modified` of what this request sees: the dataset version, or for a regenerated export the
 * version with `.r<n>` appended (a new export every request). Empty strings under the `noValidators` fault
 * (see {@link validatorHeaders}).
 */
export function responseValidators(ctx: RouteContext): Validators {
  if (ctx.faults.noValidators) return { etag: '', lastModified: '' };
  const version = ctx.regeneration > 0 ? `${ctx.data.version}.r${ctx.regeneration}` : ctx.data.version;
  return validatorsOf(version, ctx.data.lastModified);
}

/** The `ETag` and `Last-Modified` headers of `validators`, none when they are empty (`noValidators`). */
export function validatorHeaders(validators: Validators): Record<string, string> {
  return validators.etag === '' ? {} : { ETag: validators.etag, 'Last-Modified': validators.lastModified };
}

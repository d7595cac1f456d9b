/**
 * How the upstream writes what its description leaves open, beyond the styles read by default
 * (schema/field-names.ts, schema/timestamp.ts): the settings `REPORTS_FIELD_NAMES` and
 * `REPORTS_SOURCE_TIME_ZONE`. Held per process and set from the configuration when a run starts, and in
 * each decode worker from its init message, so the validator (which runs in both) reads one rule set.
 */
export interface UpstreamReading {
  /** Upstream field name → the report field it is (`service_request_id` → `id`). */
  fieldNames: Readonly<Record<string, string>>;
  /** IANA time zone of timestamps written without an offset; `undefined`: such a timestamp is refused. */
  timeZone: string | undefined;
}

const NONE: UpstreamReading = Object.freeze({ fieldNames: Object.freeze({}), timeZone: undefined });
let current: UpstreamReading = NONE;

/** Sets the rules every later validation in this thread reads (a run's start, a worker's init). */
export function setUpstreamReading(reading: UpstreamReading | undefined): void {
  current = reading ?? NONE;
}

/** The rules set last ({@link setUpstreamReading}); none by default. */
export function upstreamReading(): UpstreamReading {
  return current;
}

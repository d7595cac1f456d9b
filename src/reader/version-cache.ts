/**
 * Values derived from one data state (stats, the CSV extra columns, the export row count), kept until the
 * state changes. The key is the state's `ETag` (the last successful run, see validators.ts): the table only
 * changes when a run commits, so a derived value is computed once per run instead of once per request.
 * Concurrent requests for a missing value share one computation; a failed computation is not kept.
 */
export class VersionCache {
  #etag: string | undefined;
  #values = new Map<string, Promise<unknown>>();

  /**
   * The value named `key` of the state `etag`, computed by `compute` when missing. A new `etag` drops every
   * value of the previous state.
   */
  get<T>(etag: string, key: string, compute: () => Promise<T>): Promise<T> {
    if (etag !== this.#etag) {
      this.#etag = etag;
      this.#values = new Map();
    }
    const values = this.#values;
    let value = values.get(key) as Promise<T> | undefined;
    if (value === undefined) {
      value = compute();
      values.set(key, value);
      value.catch(() => {
        if (values.get(key) === value) values.delete(key);
      });
    }
    return value;
  }
}

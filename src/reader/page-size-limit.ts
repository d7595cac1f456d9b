import { apiError, PUBLIC_PATHS, type ApiErrorBody, type PublicEndpoint } from '../schema/public-query.js';

/**
 * The reader's own, lower `pageSize` maximum (REPORTS_READER_LIST_MAX_PAGE_SIZE / _CSV_MAX_PAGE_SIZE) on top
 * of the public one that `validatePublicQuery` checks. A value over it is refused with a 400 body in exactly
 * the shared validation's form, as if the public maximum were `max`; with the defaults (the public maxima)
 * this never refuses anything the simulator accepts.
 *
 * @returns the 400 body to send, or `null` when `pageSize` is within `max`
 */
export function pageSizeOverLimit(
  endpoint: PublicEndpoint,
  pageSize: number,
  params: URLSearchParams,
  max: number,
): ApiErrorBody | null {
  if (pageSize <= max) return null;
  const message = `must be an integer from 1 to ${max}`;
  const value = params.get('pageSize') ?? String(pageSize);
  return apiError(
    'INVALID_QUERY',
    `Invalid query for GET ${PUBLIC_PATHS[endpoint]}: pageSize ${message} (got ${JSON.stringify(value)}).`,
    [{ param: 'pageSize', message }],
  );
}

import { describe, expect, it } from 'vitest';
import {
  CSV_PAGE_SIZE_DEFAULT,
  CSV_PAGE_SIZE_MAX,
  LIST_PAGE_SIZE_DEFAULT,
  LIST_PAGE_SIZE_MAX,
  validatePublicQuery,
} from '../../src/schema/public-query.js';

const q = (s: string) => new URLSearchParams(s);

describe('validatePublicQuery', () => {
  it('applies the list defaults and keeps the filters', () => {
    expect(validatePublicQuery('list', q(''))).toEqual({
      ok: true,
      query: { pageSize: LIST_PAGE_SIZE_DEFAULT, page: 1 },
    });
    expect(
      validatePublicQuery('list', q('destination=ROAD_CONTROL&status=SUBMITTED&pageSize=7&page=3')),
    ).toEqual({
      ok: true,
      query: { destination: 'ROAD_CONTROL', status: 'SUBMITTED', pageSize: 7, page: 3 },
    });
  });

  it('applies the CSV defaults and accepts the maximum', () => {
    expect(validatePublicQuery('csv', q(''))).toEqual({
      ok: true,
      query: { pageSize: CSV_PAGE_SIZE_DEFAULT, page: 1 },
    });
    expect(validatePublicQuery('csv', q(`pageSize=${CSV_PAGE_SIZE_MAX}`)).ok).toBe(true);
    expect(validatePublicQuery('list', q(`pageSize=${LIST_PAGE_SIZE_MAX}`)).ok).toBe(true);
  });

  it.each(['abc', '-1', '0', '1e3', ' 5', '2.5', String(LIST_PAGE_SIZE_MAX + 1)])(
    'refuses pageSize=%j',
    (value) => {
      const v = validatePublicQuery('list', q(`pageSize=${encodeURIComponent(value)}`));
      expect(v.ok).toBe(false);
      if (v.ok) return;
      expect(v.status).toBe(400);
      expect(v.body.error.code).toBe('INVALID_QUERY');
      expect(v.body.error.details).toEqual([
        { param: 'pageSize', message: `must be an integer from 1 to ${LIST_PAGE_SIZE_MAX}` },
      ]);
      expect(v.body.error.message).toContain('pageSize must be an integer from 1 to 1000');
      expect(v.body.error.message).toContain(JSON.stringify(value));
    },
  );

  it('names unknown, repeated and empty parameters, in query order', () => {
    const v = validatePublicQuery('list', q('foo=1&status=A&status=B&destination=&page=0'));
    expect(v.ok).toBe(false);
    if (v.ok) return;
    expect(v.body.error.details?.map((d) => d.param)).toEqual(['foo', 'status', 'destination', 'page']);
    expect(v.body.error.details?.[0]?.message).toBe(
      'unknown parameter (allowed: destination, status, pageSize, page)',
    );
    expect(v.body.error.details?.[1]?.message).toBe('given more than once');
  });

  it('refuses any parameter on the NDJSON and stats endpoints, and paging on GeoJSON', () => {
    for (const endpoint of ['ndjson', 'stats'] as const) {
      const v = validatePublicQuery(endpoint, q('page=1'));
      expect(v.ok).toBe(false);
      if (!v.ok)
        expect(v.body.error.details?.[0]?.message).toBe(
          'unknown parameter (this endpoint takes no parameters)',
        );
    }
    expect(validatePublicQuery('geojson', q('pageSize=10')).ok).toBe(false);
    expect(validatePublicQuery('geojson', q('status=SUBMITTED')).ok).toBe(true);
  });

  it('gives identical bodies for identical input (the reader and the simulator share them)', () => {
    expect(validatePublicQuery('csv', q('pageSize=0&x=1'))).toEqual(
      validatePublicQuery('csv', q('pageSize=0&x=1')),
    );
  });
});

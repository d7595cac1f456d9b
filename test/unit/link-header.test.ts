import { describe, expect, it } from 'vitest';
import { nextLink } from '../../src/upstream/link-header.js';

const base = new URL('https://files.example.org/exports/reports.csv?pageSize=5&page=1');

describe('nextLink (RFC 8288)', () => {
  it('finds rel="next" among several links, resolving a relative target against the answering URL', () => {
    const header = '<?pageSize=5&page=9>; rel="last", <reports.csv?pageSize=5&page=2>; rel="next"';
    expect(nextLink(header, base)?.href).toBe(
      'https://files.example.org/exports/reports.csv?pageSize=5&page=2',
    );
  });

  it('accepts bare and multi-valued rel, any case, commas and semicolons inside the target, several headers', () => {
    expect(nextLink('<https://x.org/a?b=1,2;c=3>; REL=Next', base)?.href).toBe('https://x.org/a?b=1,2;c=3');
    expect(nextLink('<https://x.org/p2>; title="a, b; c"; rel="prev next"', base)?.href).toBe(
      'https://x.org/p2',
    );
    expect(nextLink(['<https://x.org/p0>; rel="prev"', '<https://x.org/p2>; rel="next"'], base)?.href).toBe(
      'https://x.org/p2',
    );
  });

  it('gives undefined without a next link, for garbage, and for an unparseable target', () => {
    expect(nextLink(undefined, base)).toBeUndefined();
    expect(nextLink('<https://x.org/p0>; rel="prev"', base)).toBeUndefined();
    expect(nextLink('rel="next"', base)).toBeUndefined();
    expect(nextLink('<http://[::1>; rel="next"', base)).toBeUndefined();
    expect(nextLink('<https://x.org/p2>; rel="nextpage"', base)).toBeUndefined();
  });
});

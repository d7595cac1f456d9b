import { DuckDBInstance } from '@duckdb/node-api';
import fc from 'fast-check';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { jsonbCannotHoldSql } from '../../src/warehouse/postgres/copy-lines.js';
import { postgresForSuite } from '../helpers/postgres.js';

const postgres = postgresForSuite();

/** Digits of `length`, the first not 0 when `lead` (a JSON integer part has no leading zero). */
const digits = (length: number, lead: boolean) =>
  fc
    .array(fc.constantFrom(...'0123456789'), { minLength: length, maxLength: length })
    .map((d) => (lead && d[0] === '0' ? ['7', ...d.slice(1)] : d).join(''));

/** Exponents around PostgreSQL's edges (±16,383 after the point, 131,072 before it, ±2^30) and anywhere. */
const exponent = fc.oneof(
  fc.integer({ min: 16_370, max: 16_400 }),
  fc.integer({ min: 131_060, max: 131_090 }),
  fc.integer({ min: 1_073_741_810, max: 1_073_741_840 }),
  fc.integer({ min: 0, max: 3_000_000_000 }),
  fc.integer({ min: 0, max: 99 }),
);

/** A valid JSON number token, written the ways an upstream may write one. */
const numberToken = fc
  .record({
    minus: fc.boolean(),
    int: fc.oneof(
      fc.constant('0'),
      fc.integer({ min: 1, max: 6 }).chain((n) => digits(n, true)),
    ),
    frac: fc.option(
      fc
        .oneof(fc.integer({ min: 1, max: 8 }), fc.integer({ min: 16_370, max: 16_390 }))
        .chain((n) => digits(n, false)),
      { nil: undefined },
    ),
    exp: fc.option(
      fc.record({ e: fc.constantFrom('e', 'E'), sign: fc.constantFrom('', '+', '-'), v: exponent }),
      {
        nil: undefined,
      },
    ),
  })
  .map(
    ({ minus, int, frac, exp }) =>
      `${minus ? '-' : ''}${int}${frac === undefined ? '' : `.${frac}`}${exp === undefined ? '' : `${exp.e}${exp.sign}${exp.v}`}`,
  );

/**
 * Tokens one step either side of each edge: digits after the point (fraction digits minus the exponent)
 * 16,382–16,385; the leading digit's place 131,070–131,073 (from an integer part, or from a fraction's
 * first non-zero digit); a zero's exponent at ±2^30 ± 1.
 */
const edgeToken = fc.oneof(
  fc
    .record({
      frac: fc.integer({ min: 1, max: 8 }).chain((n) => digits(n, true)),
      d: fc.integer({ min: -1, max: 2 }),
    })
    .map(({ frac, d }) => `1.${frac}e-${16_383 - frac.length + d}`),
  fc
    .record({
      int: fc.integer({ min: 1, max: 6 }).chain((n) => digits(n, true)),
      d: fc.integer({ min: -2, max: 1 }),
    })
    .map(({ int, d }) => `${int}e${131_072 - int.length + d}`),
  fc
    .record({ zeros: fc.integer({ min: 0, max: 5 }), d: fc.integer({ min: -2, max: 1 }) })
    .map(({ zeros, d }) => `0.${'0'.repeat(zeros)}3e${131_072 + zeros + 1 + d}`),
  fc
    .record({ sign: fc.constantFrom('', '-'), d: fc.integer({ min: -1, max: 1 }) })
    .map(({ sign, d }) => `0e${sign}${1_073_741_823 + d}`),
);

describe('numbers PostgreSQL’s jsonb cannot hold', () => {
  it('property: the publish’s DuckDB test refuses exactly the JSON texts the server refuses as jsonb', async (ctx) => {
    const db = await postgres.database(ctx);
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    const duck = await DuckDBInstance.create(':memory:');
    const c = await duck.connect();
    try {
      const serverRefuses = async (json: string) => {
        try {
          await client.query('SELECT $1::jsonb', [json]);
          return false;
        } catch (err) {
          expect((err as { code?: string }).code, json.slice(0, 80)).toBe('22003'); // value out of range
          return true;
        }
      };
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.oneof(numberToken, edgeToken), { minLength: 1, maxLength: 3 }),
          async (tokens) => {
            // Numbers in a nested value, and the same text in a string, which is not a number.
            const json = `{"n":[${tokens.join(',')}],"s":${JSON.stringify(tokens.join(' '))}}`;
            const predicted = (
              await c.runAndReadAll(`SELECT ${jsonbCannotHoldSql('$json')} AS refused`, { json })
            ).getRows()[0]![0];
            expect(Boolean(predicted), json.slice(0, 120)).toBe(await serverRefuses(json));
          },
        ),
        { numRuns: 300 },
      );
    } finally {
      c.closeSync();
      duck.closeSync();
      await client.end();
    }
  });
});

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { exitCodeFor } from '../../src/cli/exit-codes.js';
import { apiUrl, loadConfig, settingsMarkdown, unknownEnvNames } from '../../src/config/config.js';
import { packageRoot } from '../../src/util/package-root.js';
import { SETTINGS } from '../../src/config/settings.js';
import { SyncError } from '../../src/util/errors.js';

describe('loadConfig', () => {
  it('applies defaults and freezes the result', () => {
    const config = loadConfig({});
    expect(config.warehouse).toBe('data/warehouse.duckdb');
    expect(config.ndjsonPath).toBe('/api/v1/public/reports.ndjson');
    expect(config.baseUrl).toBeUndefined();
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('reads the environment, and flags win over it', () => {
    const env = { REPORTS_BASE_URL: 'http://127.0.0.1:9/', REPORTS_BATCH_SIZE: '250' };
    expect(loadConfig(env).baseUrl).toBe('http://127.0.0.1:9');
    expect(loadConfig(env).batchSize).toBe(250);
    expect(loadConfig(env, { batchSize: 7 }).batchSize).toBe(7);
  });

  it('accepts a coordinate mapped to one of its own aliases (Open311 `lng=long`), refuses other own names', () => {
    const fieldNames = 'id=service_request_id,lng=long,lat=latitude';
    expect(loadConfig({ REPORTS_FIELD_NAMES: fieldNames }).fieldNames).toBeDefined();
    for (const bad of ['lat=long', 'id=status', 'category=lon']) {
      expect(() => loadConfig({ REPORTS_FIELD_NAMES: bad }), bad).toThrow(/own name/);
    }
  });

  it('refuses a bad value naming the variable, the value and what is allowed', () => {
    let error: unknown;
    try {
      loadConfig({ REPORTS_BATCH_SIZE: 'abc', REPORTS_MAX_REJECT_RATIO: '2' });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(SyncError);
    const e = error as SyncError;
    expect(e.code).toBe('CONFIG_INVALID');
    expect(exitCodeFor(e)).toBe(2);
    expect(e.message).toContain(
      'REPORTS_BATCH_SIZE="abc" is not valid: expected an integer from 1 to 1000000',
    );
    expect(e.message).toContain('REPORTS_MAX_REJECT_RATIO="2"');
  });

  it('refuses numbers not written as numbers and a base URL the API paths cannot follow', () => {
    for (const [name, value] of [
      ['REPORTS_RETRIES', ' '],
      ['REPORTS_BATCH_SIZE', '0x10'],
      ['REPORTS_BATCH_SIZE', '1.5'],
      ['REPORTS_MAX_REJECT_RATIO', ' '],
      ['REPORTS_BASE_URL', 'http://127.0.0.1:9/#top'],
    ]) {
      expect(() => loadConfig({ [name!]: value }), `${name}=${value}`).toThrow(new RegExp(`${name}=`));
    }
    expect(loadConfig({ REPORTS_BATCH_SIZE: ' 250 ', REPORTS_MAX_REJECT_RATIO: '0.5' })).toMatchObject({
      batchSize: 250,
      maxRejectRatio: 0.5,
    });
    // Decimal numbers as people write them still are.
    expect(loadConfig({ REPORTS_BATCH_SIZE: '1e3', REPORTS_MAX_REJECT_RATIO: '.5' })).toMatchObject({
      batchSize: 1000,
      maxRejectRatio: 0.5,
    });
  });

  it('names the REPORTS_* variables no setting reads, with the setting meant when one is near', () => {
    expect(
      unknownEnvNames({
        REPORTS_RECENT_PAGESIZE: '50',
        REPORTS_BATCH_SIZE: '9',
        REPORTS_SCHEDULE_SYNC_NDJSON: 'off',
        REPORTS_WHATEVER_ELSE_ENTIRELY: '1',
        HOME: '/root',
      }),
    ).toEqual([
      'REPORTS_RECENT_PAGESIZE is not a setting and is ignored (did you mean REPORTS_RECENT_PAGE_SIZE?): see docs/configuration.md',
      'REPORTS_WHATEVER_ELSE_ENTIRELY is not a setting and is ignored: see docs/configuration.md',
    ]);
  });

  it('puts the API paths after the base URL path, keeping a query the base URL carries', () => {
    const url = (base: string) =>
      apiUrl(loadConfig({ REPORTS_BASE_URL: base }), '/api/v1/public/reports.ndjson');
    expect(url('http://127.0.0.1:9/base/?token=t').toString()).toBe(
      'http://127.0.0.1:9/base/api/v1/public/reports.ndjson?token=t',
    );
    expect(url('http://127.0.0.1:9').toString()).toBe('http://127.0.0.1:9/api/v1/public/reports.ndjson');
  });

  it('names the flag when the bad value came from a flag, and never shows the API key', () => {
    expect(() => loadConfig({}, { baseUrl: 'ftp://x' })).toThrow(/--base-url="ftp:\/\/x"/);
    expect(() => loadConfig({}, { csvPageSize: '-5' })).toThrow(/--page-size="-5"/); // sync's own flag name
    expect(() => loadConfig({ REPORTS_API_KEY: '' }, { apiKey: '' })).toThrow(/\[redacted\]/);
  });

  it('documents every setting in the README table', () => {
    const table = settingsMarkdown();
    for (const def of Object.values(SETTINGS)) expect(table).toContain(`\`${def.env}\``);
  });

  it('docs/configuration.md holds the table as generated from the settings', () => {
    const doc = readFileSync(join(packageRoot(), 'docs', 'configuration.md'), 'utf8');
    expect(doc).toContain(settingsMarkdown());
  });
});

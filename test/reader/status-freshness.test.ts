import { afterEach, describe, expect, it } from 'vitest';
import { startSyncedReader, type SyncedReader } from '../helpers/reader.js';
import { syncTargetOnce } from '../helpers/sync.js';

// The status page keeps its warehouse figures while the run log is unchanged; any run that ends changes
// it, so a failed run shows on the next load, not after the next success.

let s: SyncedReader | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

describe('the status page and the run log', () => {
  it('shows a failed run on the next load, though the last success is unchanged', async () => {
    s = await startSyncedReader({ generate: { n: 50, seed: 3 } }, { readerValidatorsTtlMs: 0, retries: 0 });
    const page = async () => (await fetch(`${s!.reader.url}/`)).text();
    const cells = (html: string) => [...html.matchAll(/<td class="(\w+)">\1<\/td>/g)].map((m) => m[1]);
    expect(cells(await page())).not.toContain('failed');
    // An upstream that is gone: the run fails and is recorded in the same warehouse.
    const [failed] = await syncTargetOnce(
      s.warehouse,
      { ...s.config, baseUrl: 'http://127.0.0.1:9' },
      'ndjson',
    );
    expect(failed?.status).toBe('failed');
    expect(cells(await page())).toContain('failed');
  });

  it('answers HEAD with the headers GET has (its length included) and no body', async () => {
    s = await startSyncedReader({ generate: { n: 5, seed: 3 } });
    const identity = { 'accept-encoding': 'identity' };
    const get = await fetch(`${s.reader.url}/`, { headers: identity });
    const head = await fetch(`${s.reader.url}/`, { method: 'HEAD', headers: identity });
    expect(head.status).toBe(200);
    expect(Number(head.headers.get('content-length'))).toBe(Buffer.byteLength(await get.text()));
    expect(await head.text()).toBe('');
  });
});

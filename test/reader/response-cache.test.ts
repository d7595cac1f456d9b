import { describe, expect, it } from 'vitest';
import { ResponseCache } from '../../src/reader/response-cache.js';

describe('ResponseCache', () => {
  it('computes once per key and state, and a new ETag empties it', async () => {
    const cache = new ResponseCache(1024);
    let calls = 0;
    const compute = async () => `body-${++calls}`;
    expect(await cache.get('"r1"', 'a', compute)).toBe('body-1');
    expect(await cache.get('"r1"', 'a', compute)).toBe('body-1');
    expect(await Promise.all([cache.get('"r1"', 'b', compute), cache.get('"r1"', 'b', compute)])).toEqual([
      'body-2',
      'body-2',
    ]);
    expect(await cache.get('"r2"', 'a', compute)).toBe('body-3');
    expect(cache.bytes).toBe('body-3'.length * 2);
  });

  it('stays within its byte bound, dropping the least recently used first', async () => {
    const cache = new ResponseCache(40); // two bodies of 10 characters (20 bytes each)
    const body = (k: string) => async () => k.repeat(10);
    await cache.get('e', 'a', body('a'));
    await cache.get('e', 'b', body('b'));
    await cache.get('e', 'a', body('x')); // a hit: "a" becomes the most recent
    await cache.get('e', 'c', body('c')); // evicts "b"
    expect(cache.bytes).toBeLessThanOrEqual(40);
    expect(await cache.get('e', 'a', body('z'))).toBe('aaaaaaaaaa');
    expect(await cache.get('e', 'b', body('B'))).toBe('BBBBBBBBBB');
  });

  it('keeps nothing when off (0 bytes) or when a computation fails', async () => {
    const off = new ResponseCache(0);
    let n = 0;
    await off.get('e', 'a', async () => String(++n));
    expect(await off.get('e', 'a', async () => String(++n))).toBe('2');
    const cache = new ResponseCache(1024);
    await expect(cache.get('e', 'a', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await cache.get('e', 'a', async () => 'ok')).toBe('ok');
  });
});

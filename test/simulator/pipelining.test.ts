import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { PUBLIC_PREFIX } from '../../src/schema/public-query.js';
import { startTestSimulator } from '../helpers/simulator.js';

/**
 * Sends `paths` as HTTP/1.1 requests written at once on one connection (pipelining, which HTTP/1.1
 * allows), and resolves with everything the server sent until it closed after the last (`Connection:
 * close` on it) or `ms` passed.
 */
function pipelined(base: string, paths: string[], ms = 10_000): Promise<string> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    const parts: Buffer[] = [];
    const timer = setTimeout(() => socket.destroy(), ms);
    socket.on('data', (d: Buffer) => parts.push(d));
    socket.on('error', reject);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(parts).toString('utf8'));
    });
    socket.write(
      paths
        .map(
          (p, i) =>
            `GET ${p} HTTP/1.1\r\nHost: ${hostname}:${port}\r\n${i === paths.length - 1 ? 'Connection: close\r\n' : ''}\r\n`,
        )
        .join(''),
    );
  });
}

describe('the simulator on one keep-alive connection', () => {
  it('answers requests sent before the previous answer finished, each in order and whole', async () => {
    const sim = await startTestSimulator({ generate: { n: 100, seed: 3 } });
    const paths = [
      `${PUBLIC_PREFIX}/exports/reports.csv?pageSize=50&page=1`,
      `${PUBLIC_PREFIX}/exports/reports.csv?pageSize=50&page=2`,
      `${PUBLIC_PREFIX}/reports.ndjson`,
      `${PUBLIC_PREFIX}/reports?pageSize=5`,
      `${PUBLIC_PREFIX}/exports/reports.csv?pageSize=50&page=3`,
    ];
    const raw = await pipelined(sim.url, paths);
    const statuses = [...raw.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => m[1]);
    expect(statuses).toEqual(['200', '200', '200', '200', '200']);
    // Each body as the same request alone gets it.
    for (const path of paths) {
      const alone = await (await fetch(`${sim.url}${path}`)).text();
      expect(raw.includes(alone.slice(-200)), path).toBe(true);
    }
  });
});

import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/util/package-root.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { tempDir } from '../helpers/sync.js';

const hasTmux = spawnSync('tmux', ['-V']).status === 0;
if (!hasTmux)
  console.warn('tmux not installed: the terminal test of npm start is skipped (.ci/run installs it)');

/** SGR (colour/style) sequences. */
const SGR = /\x1b\[[0-9;]*m/; // eslint-disable-line no-control-regex

describe.skipIf(!hasTmux)('npm start on a terminal (tmux)', () => {
  let tmp: ReturnType<typeof tempDir>;
  const socket = `reports-sync-test-${process.pid}`;
  const tmux = (...args: string[]) => {
    const r = spawnSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`tmux ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  beforeEach(() => {
    tmp = tempDir();
  });
  afterEach(() => {
    spawnSync('tmux', ['-L', socket, 'kill-server']);
    tmp.cleanup();
  });

  it('shows one progress line moving every second, erased before the summary, logs above it, no colour with NO_COLOR', async () => {
    const sim = await startTestSimulator({ generate: { n: 300_000 } });
    const raw = join(tmp.dir, 'raw.log');
    tmux('new-session', '-d', '-s', 't', '-x', '200', '-y', '80', 'sh');
    tmux('pipe-pane', '-t', 't', '-o', `cat >> '${raw}'`);
    const env = `REPORTS_BASE_URL=${sim.url} REPORTS_WAREHOUSE='${join(tmp.dir, 'w.duckdb')}' NO_COLOR=1 REPORTS_LOG_LEVEL=info`;
    tmux('send-keys', '-t', 't', `cd '${packageRoot()}' && ${env} npm start; echo EXIT=$?`, 'Enter');
    let screen = '';
    for (let waited = 0; !/EXIT=\d+/.test(screen) && waited < 170_000; waited += 500) {
      await sleep(500);
      screen = tmux('capture-pane', '-p', '-t', 't', '-S', '-');
    }
    expect(screen).toContain('EXIT=0');
    const bytes = readFileSync(raw, 'utf8');

    // Every redraw of the progress line carries its elapsed time: reading, then the merge phase.
    const reading = [...bytes.matchAll(/ndjson: [\d,]+ records[^\r\n]*? · (\d+\.\d) s/g)].map((m) =>
      Number(m[1]),
    );
    const merging = [...bytes.matchAll(/ndjson: merging 300,000 records… (\d+\.\d) s/g)].map((m) =>
      Number(m[1]),
    );
    expect(reading.length).toBeGreaterThan(3);
    expect(merging.length).toBeGreaterThan(0);
    for (const shown of [reading, merging]) {
      for (let i = 1; i < shown.length; i++) expect(shown[i]! - shown[i - 1]!).toBeLessThanOrEqual(1.0);
    }
    expect(bytes).toMatch(/ndjson: [\d,]+ records · \d+% · [\d,]+ records\/s · [\d.]+ MiB · [\d.]+ s · ETA /);

    // The final screen: no progress left over, the summary in one piece with no log line inside it.
    const lines = screen.split('\n');
    expect(lines.filter((l) => / records\/s · |merging [\d,]+ records/.test(l))).toEqual([]);
    const start = lines.findIndex((l) => /^Run \S+ \(ndjson\): SUCCEEDED/.test(l));
    const end = lines.findIndex((l) => l.startsWith('Query it:'));
    expect(start).toBeGreaterThan(0);
    expect(end).toBeGreaterThan(start);
    const summary = lines.slice(start, end);
    expect(summary.filter((l) => /\b(INFO|WARN|ERROR|DEBUG)\b|^\[\d\d:\d\d/.test(l))).toEqual([]);
    // Log lines did reach the terminal, above the summary, one line each.
    const logLines = lines.slice(0, start).filter((l) => /INFO/.test(l));
    expect(logLines.some((l) => l.includes('run started'))).toBe(true);
    expect(SGR.test(bytes)).toBe(false);
  }, 180_000);
});

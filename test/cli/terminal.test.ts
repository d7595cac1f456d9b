import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import stringWidth from 'string-width';
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

/**
 * The screens a newcomer sees first, at 80 and 120 columns: the demo, `status`, a failed sync, an interrupted
 * sync, `status` again. No line may be wrapped by the terminal (tmux's `capture-pane -J` joins wrapped
 * lines, so a joined line wider than the pane is one the terminal wrapped), a failure is told by the summary
 * with no error log line above it, and a Ctrl-C is no error.
 */
describe.skipIf(!hasTmux)('the first screens fit the terminal (tmux, 80 and 120 columns)', () => {
  let tmp: ReturnType<typeof tempDir>;
  const socket = `reports-sync-screens-${process.pid}`;
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

  it.each([80, 120])(
    'at %i columns: demo, status, a failed and an interrupted sync',
    async (columns) => {
      const failing = await startTestSimulator({ fixture: 'small.ndjson', faults: ['ndjson:status=500'] });
      // Records arrive, then the body stalls: the sync is mid-read when Ctrl-C comes.
      const stalling = await startTestSimulator({
        generate: { n: 60_000 },
        faults: ['ndjson:stall=20000000'],
      });
      const cli = `node '${join(packageRoot(), 'dist', 'src', 'cli', 'main.js')}'`;
      const script = join(tmp.dir, 'screens.sh');
      const queryFile = join(tmp.dir, 'query.sql');
      writeFileSync(queryFile, 'select run_id, location, issues, raw from rejected_records order by line');
      writeFileSync(
        script,
        [
          `for v in $(env | grep -o '^REPORTS_[A-Z_]*'); do unset "$v"; done`,
          // Ctrl-C reaches the whole foreground group: the script goes on after the sync it stops.
          `trap ':' INT`,
          `export REPORTS_WAREHOUSE='${join(tmp.dir, 'warehouse.duckdb')}' NO_COLOR=1`,
          `echo '=== demo'; ${cli} demo; echo "=== exit $?"`,
          `echo '=== status'; ${cli} status; echo "=== exit $?"`,
          `echo '=== failed'; REPORTS_RETRIES=1 REPORTS_RETRY_BASE_MS=50 ${cli} sync --base-url ${failing.url}; echo "=== exit $?"`,
          `echo '=== interrupted'; REPORTS_BATCH_SIZE=500 ${cli} sync --base-url ${stalling.url}; echo "=== exit $?"`,
          `echo '=== status'; ${cli} status; echo "=== exit $?"`,
          // The quarantine's raw records run to hundreds of characters.
          `echo '=== sql'; ${cli} sql "$(cat '${queryFile}')"; echo "=== exit $?"`,
          `echo '=== end'`,
          // The full log, for who asks for it (its JSON fields are not fitted to the screen).
          `REPORTS_RETRIES=0 ${cli} sync --verbose --base-url ${failing.url}; echo "=== exit $?"`,
          `echo '=== verbose end'`,
        ].join('\n'),
      );
      tmux('new-session', '-d', '-s', 't', '-x', String(columns), '-y', '50', 'sh');
      tmux('set-option', '-t', 't', 'history-limit', '5000');
      tmux('send-keys', '-t', 't', `PS1='$ ' sh '${script}'`, 'Enter');
      const screen = () => tmux('capture-pane', '-p', '-J', '-t', 't', '-S', '-');
      const waitFor = async (pattern: RegExp, ms = 60_000) => {
        for (let waited = 0; !pattern.test(screen()); waited += 200) {
          if (waited > ms) throw new Error(`no ${String(pattern)} on the screen:\n${screen()}`);
          await sleep(200);
        }
      };
      await waitFor(/=== interrupted[\s\S]*records\/s/);
      tmux('send-keys', '-t', 't', 'C-c');
      await waitFor(/=== verbose end/);
      const [text = '', verbose = ''] = screen().split('=== end\n');

      const wrapped = text.split('\n').filter((l) => stringWidth(l.trimEnd()) > columns);
      expect(wrapped, text).toEqual([]);

      const section = (name: string, nth = 0) =>
        text.split(`=== ${name}\n`)[nth + 1]!.split('\n=== exit')[0]!;
      const exit = (name: string, nth = 0) =>
        /^ (\d+)/.exec(text.split(`=== ${name}\n`)[nth + 1]!.split('\n=== exit')[1]!)?.[1];
      expect(exit('demo')).toBe('0');
      expect(section('demo')).toMatch(/SUCCEEDED/);
      expect(section('demo')).toMatch(/field +problem +records/);
      expect(section('demo')).toMatch(/^Query it: /m);
      expect(exit('status')).toBe('0');
      expect(section('status')).toMatch(/^sync-ndjson .*succeeded/m);

      const failed = section('failed');
      expect(exit('failed')).toBe('1');
      expect(failed).toMatch(/FAILED in [\d.]+ s after\s+2\s+attempts/);
      expect(failed).toMatch(/^ {2}error: HTTP 500 from /m);
      // Told once: by the summary; the only log line above it is the retry's warning.
      // (no `ERROR run failed` line, no multi-line JSON dump of the error).
      expect(failed).not.toMatch(/^error:|ERROR|^\s+err: \{|"code": "HTTP_STATUS"/m);
      expect(failed.split('\n').filter((l) => l.startsWith('warning:'))).toHaveLength(1);

      const interrupted = section('interrupted');
      expect(exit('interrupted')).toBe('130');
      expect(interrupted).toMatch(/ABORTED in/);
      expect(interrupted).toMatch(/staged, not merged/);
      expect(interrupted).not.toMatch(/^error:|ERROR/m);

      expect(exit('sql')).toBe('0');
      expect(section('sql')).toMatch(/^run_id +location +issues +raw/m);
      expect(section('sql')).toContain('…');
      // --verbose: the pino log, every entry with its fields, the failure too.
      expect(verbose).toMatch(/INFO.*run started/);
      expect(verbose).toMatch(/ERROR.*run failed/);

      const after = section('status', 1);
      expect(after).toMatch(/^Errors of these runs:/m);
      expect(after).toMatch(/-ndjson-\S+: HTTP 500 from/);
    },
    120_000,
  );
});

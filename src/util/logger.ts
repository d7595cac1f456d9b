import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import { createRequire } from 'node:module';
import type PinoPretty from 'pino-pretty';
import { redactSecrets } from './redact.js';
import { escapeControls, screenWidth, truncateToWidth } from './screen.js';
import { statusLineFor, useColor } from './status-line.js';

export type { Logger } from 'pino';

/**
 * Creates the process logger, on stderr (stdout is kept for command output such as `sql` tables).
 * - Pretty (on a terminal unless `pretty` is false): pino-pretty formats each line synchronously in this
 *   thread and writes it through the terminal's status line, so the progress line is erased before a log
 *   line and drawn again after it; colours follow `NO_COLOR`/`FORCE_COLOR`.
 * - Otherwise JSON lines: ISO `time`, the level as a label (`"level":"info"`), errors with their `code`,
 *   message and cause.
 * Every line passes through `redactSecrets` (redact.ts) before it is written, so the API key and URL
 * credentials never reach the output, whatever field, message or error stack carried them; the `redact`
 * paths below blank the known fields as a first line.
 *
 * - Brief (`mode.brief`, pretty only): the terminal of a one-shot command that prints its own summary
 *   (`sync`, `demo`): one line per entry, `warning: <message>: <error message>`, cut to the terminal's
 *   width, without the entries that carry an `outcome` (a run's end, the command's last word), which the
 *   summary prints; the full log is a `--verbose` away.
 *
 * @param level pino level name (`info`, `debug`, …)
 * @param pretty `true`/`false` forces the format; `undefined` means "pretty on a TTY"
 */
export function createLogger(level: string, pretty?: boolean, mode: { brief?: boolean } = {}): Logger {
  const usePretty = pretty ?? Boolean(process.stderr.isTTY);
  const options: LoggerOptions = {
    level,
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    serializers: { err: serializeError },
    redact: {
      paths: ['apiKey', '*.apiKey', 'headers["x-api-key"]', '*.headers["x-api-key"]', 'config.apiKey'],
      censor: '[redacted]',
    },
  };
  if (usePretty) {
    const line = statusLineFor(process.stderr);
    if (mode.brief) {
      return pino(
        { ...options, formatters: {} },
        {
          write: (json: string) => {
            const text = briefLine(redactSecrets(json), screenWidth(process.stderr));
            if (text) line.log(text);
          },
        },
      );
    }
    const pretty = prettyFormatter(useColor(process.stderr));
    // Formatted in this thread as each line is logged (no transport thread racing stdout), and written
    // through the status line. The pretty format reads numeric levels; JSON keeps labels.
    return pino(
      { ...options, formatters: {} },
      { write: (json: string) => line.log(pretty(redactSecrets(json))) },
    );
  }
  return pino(options, redacting(pino.destination({ dest: 2, sync: true })));
}

/**
 * The terminal log's formatter (`--verbose` on a terminal): pino's JSON of one entry to pino-pretty's one
 * line, local time to the millisecond, colours when `colorize`. An entry may quote upstream text (an error
 * body, a field name, a stack): every control character is shown as an escape (screen.ts
 * `escapeControls`), never acted on by the terminal; only pino-pretty's own colours stay.
 */
export function prettyFormatter(colorize: boolean): (json: string) => string {
  const pretty = loadPretty().prettyFactory({
    colorize,
    ignore: 'pid,hostname',
    singleLine: true,
    translateTime: 'SYS:HH:MM:ss.l',
    // Escaped before the colours are added: a colour sequence in a message is the upstream's, not ours.
    messageFormat: (log, key) => escapeControls(String(log[key] ?? '')),
  });
  return (json) => escapeControls(pretty(json), true);
}

const LEVEL_WORDS: Record<number, string> = {
  10: 'trace',
  20: 'debug',
  30: 'info',
  40: 'warning',
  50: 'error',
  60: 'fatal',
};

/**
 * One log entry (pino's JSON, numeric level) as the brief terminal line: `warning: <msg>: <err.message>`
 * cut to `width` columns; an empty string for an entry with an `outcome` (the summary tells it).
 */
export function briefLine(json: string, width: number | undefined): string {
  let entry: { level?: number; msg?: string; outcome?: unknown; err?: { message?: unknown } };
  try {
    entry = JSON.parse(json) as typeof entry;
  } catch {
    return json;
  }
  if (entry.outcome !== undefined) return '';
  const why = typeof entry.err?.message === 'string' ? `: ${entry.err.message}` : '';
  const text = `${LEVEL_WORDS[entry.level ?? 30] ?? 'log'}: ${entry.msg ?? ''}${why}`.replace(
    /\s*\n\s*/g,
    ' ',
  );
  const shown = escapeControls(text);
  return `${width === undefined ? shown : truncateToWidth(shown, width)}\n`;
}

/** pino-pretty, loaded only when used (~150 ms of startup otherwise spent on every command). */
function loadPretty(): typeof PinoPretty {
  return createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty;
}

/** A destination that writes each line with its secrets redacted. */
export function redacting(out: DestinationStream): DestinationStream {
  return { write: (line: string) => out.write(redactSecrets(line)) };
}

/**
 * pino's `err` serializer: an Error with its type, `code`, message, stack and cause chain; a plain object
 * (`SyncError.toJSON()`: code, message, context, cause) as it is.
 */
export function serializeError(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  const json = pino.stdSerializers.errWithCause(err) as unknown as Record<string, unknown>;
  const code = (err as { code?: unknown }).code;
  return code === undefined ? json : { ...json, code };
}

/** A logger that drops everything: for tests and library use without output. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

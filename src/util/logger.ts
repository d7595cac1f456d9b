import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import { createRequire } from 'node:module';
import type PinoPretty from 'pino-pretty';
import { redactSecrets } from './redact.js';

export type { Logger } from 'pino';

/**
 * Creates the process logger. JSON lines on stderr by default (stdout is kept for command output such as
 * `sql` tables); pretty when stderr is a TTY and `pretty` is not forced off. Every line passes through
 * `redactSecrets` (redact.ts) before it is written, so the API key and URL credentials never reach the
 * output, whatever field, message or error stack carried them; the `redact` paths below blank the known
 * fields as a first line.
 *
 * @param level pino level name (`info`, `debug`, …)
 * @param pretty `true`/`false` forces the format; `undefined` means "pretty on a TTY"
 */
export function createLogger(level: string, pretty?: boolean): Logger {
  const usePretty = pretty ?? Boolean(process.stderr.isTTY);
  const options: LoggerOptions = {
    level,
    base: { pid: process.pid },
    redact: {
      paths: ['apiKey', '*.apiKey', 'headers["x-api-key"]', '*.headers["x-api-key"]', 'config.apiKey'],
      censor: '[redacted]',
    },
  };
  const out: DestinationStream = usePretty
    ? loadPretty()({ destination: 2, colorize: true, ignore: 'pid,hostname', sync: true })
    : pino.destination({ dest: 2, sync: true });
  return pino(options, redacting(out));
}

/** pino-pretty, loaded only when used (~150 ms of startup otherwise spent on every command). */
function loadPretty(): typeof PinoPretty {
  return createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty;
}

/** A destination that writes each line with its secrets redacted. */
export function redacting(out: DestinationStream): DestinationStream {
  return { write: (line: string) => out.write(redactSecrets(line)) };
}

/** A logger that drops everything: for tests and library use without output. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

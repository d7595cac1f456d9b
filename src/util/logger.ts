import { pino, type Logger, type LoggerOptions } from 'pino';

export type { Logger } from 'pino';

/**
 * Creates the process logger. JSON lines on stderr by default (stdout is kept for command output such as
 * `sql` tables); pretty when stderr is a TTY and `pretty` is not forced off. The API key is redacted
 * wherever it could appear (headers, config).
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
  if (usePretty) {
    return pino({
      ...options,
      transport: {
        target: 'pino-pretty',
        options: { destination: 2, colorize: true, ignore: 'pid,hostname' },
      },
    });
  }
  return pino(options, pino.destination({ dest: 2, sync: true }));
}

/** A logger that drops everything: for tests and library use without output. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

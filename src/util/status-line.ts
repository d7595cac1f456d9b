import { createLogUpdate } from 'log-update';
import { screenWidth, truncateToWidth } from './screen.js';

/**
 * The one writer of a terminal's stderr while a status line (progress) is shown: log lines go through
 * {@link StatusLine.log}, which erases the status line, writes the log line and draws the status again, so a
 * log line never lands inside the progress and the progress never stays half-overwritten.
 */
export interface StatusLine {
  /** Shows `text` as the status line (replacing the previous one), cut to the terminal's width. */
  set(text: string): void;
  /** Writes `text` (complete lines) above the status line. */
  log(text: string): void;
  /** Erases the status line; later log lines are written as they are. */
  clear(): void;
}

type Stream = NodeJS.WritableStream & { isTTY?: boolean; columns?: number };

const lines = new WeakMap<object, StatusLine>();

/** The status line of `stream` (one per stream, so the logger and the progress reporter share it). */
export function statusLineFor(stream: Stream = process.stderr): StatusLine {
  let line = lines.get(stream);
  if (!line) {
    line = createStatusLine(stream);
    lines.set(stream, line);
  }
  return line;
}

function createStatusLine(stream: Stream): StatusLine {
  // The cursor stays visible: hiding it would need an exit hook to show it again after Ctrl-C.
  const render = createLogUpdate(stream, { showCursor: true });
  let current: string | undefined;
  return {
    set(text) {
      // One line, cut to the terminal's width: a status line that wrapped would leave a line behind.
      const width = screenWidth(stream);
      current = width === undefined ? text : truncateToWidth(text, width);
      render(current);
    },
    log(text) {
      if (current === undefined) {
        stream.write(text);
        return;
      }
      render.clear();
      stream.write(text);
      render(current);
    },
    clear() {
      if (current === undefined) return;
      render.clear();
      render.done();
      current = undefined;
    },
  };
}

/**
 * Whether to colour output on `stream`, by the common conventions: `NO_COLOR` (any non-empty value) turns
 * colour off, `FORCE_COLOR` (other than `0`/`false`) turns it on, otherwise only on a terminal
 * (https://no-color.org, https://force-color.org).
 */
export function useColor(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.NO_COLOR) return false;
  const force = env.FORCE_COLOR;
  if (force !== undefined && force !== '') return force !== '0' && force !== 'false';
  return Boolean(stream.isTTY);
}

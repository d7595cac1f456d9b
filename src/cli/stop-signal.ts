import { EXIT_SUCCESS, signalExitCode } from './exit-codes.js';

/**
 * Calls `listener` on each SIGINT and SIGTERM (the stop signals of a terminal and of a supervisor) until
 * the returned function is called. Every command that stops on a signal subscribes through this.
 */
export function onTermSignals(listener: (signal: NodeJS.Signals) => void): () => void {
  process.on('SIGINT', listener);
  process.on('SIGTERM', listener);
  return () => {
    process.off('SIGINT', listener);
    process.off('SIGTERM', listener);
  };
}

/** One Ctrl-C reaches every process of the group (npm and node): a signal within this of the first is it. */
export const SAME_SIGNAL_MS = 1_000;

/** Options of {@link onStopSignal}. */
export interface StopSignalOptions {
  /** How long the command may take to stop after the first signal (ms); then the process exits. */
  graceMs: number;
  /** The first SIGINT/SIGTERM: stop the work (abort it). */
  onStop: (signal: NodeJS.Signals) => void;
  /** Called right before the forced exit (grace period over, or a second signal). */
  onGraceOver?: (signal: NodeJS.Signals) => void;
  /**
   * Whether the first signal starts the grace timer (default: always). False while work that is never cut
   * runs (a merge committing): the command then ends when that work does, or at a second signal.
   */
  graceApplies?: () => boolean;
}

/** What {@link onStopSignal} returns. */
export interface StopSignal {
  /** The signal received, if any. */
  received(): NodeJS.Signals | undefined;
  /** The conventional exit code of the signal: 128 + its number (SIGINT 130, SIGTERM 143). */
  exitCode(): number;
  /**
   * Ends the handling (and the grace timer): the command's work is over and its exit code set. A signal
   * from then until the process ends exits at once with that exit code (it no longer stops anything), so
   * the exit status stays the outcome's instead of the signal's default "killed".
   */
  dispose(): void;
}

/**
 * SIGINT/SIGTERM handling of a one-shot command (the daemon's stop, without its HTTP side): the first signal
 * calls `onStop` and starts the grace timer; a signal more than a second later (one Ctrl-C reaches npm and
 * node alike) or the end of the grace period exits at once with 130/143.
 */
export function onStopSignal(options: StopSignalOptions): StopSignal {
  let signal: NodeJS.Signals | undefined;
  let at = 0;
  let timer: NodeJS.Timeout | undefined;
  const exitCode = () => (signal ? signalExitCode(signal) : EXIT_SUCCESS);
  const exitNow = () => {
    if (signal) options.onGraceOver?.(signal);
    process.exit(exitCode());
  };
  const handler = (received: NodeJS.Signals) => {
    if (signal) {
      if (Date.now() - at >= SAME_SIGNAL_MS) exitNow();
      return;
    }
    signal = received;
    at = Date.now();
    if (options.graceApplies?.() !== false) {
      timer = setTimeout(exitNow, options.graceMs);
      timer.unref();
    }
    options.onStop(received);
  };
  // Once disposed: the exit code the command set (the signal's own when none was set, e.g. after a throw).
  const afterwards = (received: NodeJS.Signals) => {
    const code = process.exitCode;
    process.exit(typeof code === 'number' ? code : signalExitCode(received));
  };
  const unsubscribe = onTermSignals(handler);
  return {
    received: () => signal,
    exitCode,
    dispose() {
      if (timer) clearTimeout(timer);
      // `afterwards` first: Node restores the default action (kill) when a signal's last listener goes,
      // so removing `handler` first left an instant in which a signal killed the finished command.
      onTermSignals(afterwards);
      unsubscribe();
    },
  };
}

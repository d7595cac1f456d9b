import { CommanderError } from 'commander';
import { describe, expect, it } from 'vitest';
import { ERROR_EXIT_CODES, exitCodeFor, signalExitCode } from '../../src/cli/exit-codes.js';
import { ERROR_CODES, type SyncErrorCode } from '../../src/util/error-codes.js';
import { SyncError } from '../../src/util/errors.js';

// The codes a user fixes by changing the command, a setting or the machine's state (exit 2); any other
// code is a failed run (exit 1). Listed here so a change of status is a visible test change.
const USAGE: SyncErrorCode[] = [
  'CLI_INVALID_OPTION',
  'CONFIG_INVALID',
  'DATASET_NOT_FOUND',
  'FAULT_SPEC_INVALID',
  'HTTP_LISTEN',
  'JOB_INVALID',
  'READER_LISTEN',
  'RESET_NOT_CONFIRMED',
  'RUN_NOT_FOUND',
  'SIMULATOR_LISTEN',
  'SOURCE_UNKNOWN',
  'SQL_MULTIPLE',
  'WAREHOUSE_LOCKED',
  'WAREHOUSE_MISSING',
];

describe('exitCodeFor', () => {
  it('maps every error code, usage and configuration to 2 and the rest to 1', () => {
    expect(Object.keys(ERROR_EXIT_CODES).sort()).toEqual(Object.keys(ERROR_CODES).sort());
    for (const code of Object.keys(ERROR_CODES) as SyncErrorCode[]) {
      expect([code, exitCodeFor(new SyncError(code, 'x'))]).toEqual([code, USAGE.includes(code) ? 2 : 1]);
    }
  });

  it('keeps 0 for --help and --version and gives 2 to any other commander error', () => {
    expect(exitCodeFor(new CommanderError(0, 'commander.helpDisplayed', '(outputHelp)'))).toBe(0);
    expect(exitCodeFor(new CommanderError(1, 'commander.unknownOption', "unknown option '--x'"))).toBe(2);
  });

  it('gives 1 to anything else', () => {
    expect(exitCodeFor(new Error('a bug'))).toBe(1);
    expect(exitCodeFor('a string')).toBe(1);
    expect(exitCodeFor(undefined)).toBe(1);
  });
});

describe('signalExitCode', () => {
  it('is 128 + the signal number for SIGINT and SIGTERM, 1 otherwise', () => {
    expect(signalExitCode('SIGINT')).toBe(130);
    expect(signalExitCode('SIGTERM')).toBe(143);
    expect(signalExitCode('SIGHUP')).toBe(1);
  });
});

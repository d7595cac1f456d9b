#!/usr/bin/env node
import { CommanderError } from 'commander';
import { errorMessage, SyncError } from '../util/errors.js';
import { screenWidth, wrapToWidth } from '../util/screen.js';
import { exitCodeFor } from './exit-codes.js';
import { buildProgram } from './program.js';

// The bin entry: parse, run, and turn errors into a readable message and an exit code (never a stack
// trace for an expected failure).

// Output piped to a reader that stopped (`… | head`): the rest is not wanted, the command itself goes on
// (a sync still commits and records its run), and no write error crashes the process.
for (const out of [process.stdout, process.stderr]) {
  out.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE' && err.code !== 'ERR_STREAM_DESTROYED') throw err;
  });
}

try {
  await buildProgram().parseAsync(process.argv);
} catch (err) {
  if (err instanceof SyncError) {
    // On a terminal wrapped to its width, so no line runs off its edge.
    process.stderr.write(`${wrapToWidth(`reports-sync: ${err.message}`, screenWidth(process.stderr))}\n`);
  } else if (!(err instanceof CommanderError)) {
    // commander has printed its own message (or the help) already.
    process.stderr.write(`reports-sync: unexpected error: ${errorMessage(err)}\n`);
    if (err instanceof Error && err.stack) process.stderr.write(`${err.stack}\n`);
  }
  process.exitCode = exitCodeFor(err);
}

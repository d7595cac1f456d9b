import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // One fixed fast-check seed unless FC_SEED says otherwise (test/setup/fast-check-seed.ts).
    setupFiles: ['test/setup/fast-check-seed.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Integration tests open real DuckDB files and spawn the built CLI: keep parallelism modest on 2 cores.
    maxWorkers: 2,
    pool: 'forks',
    // Memory assertions measure live memory after a full GC.
    execArgv: ['--expose-gc'],
  },
});

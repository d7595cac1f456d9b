import { defineConfig, mergeConfig } from 'vitest/config';
import base from './vitest.config.js';

// `npm run test:shake`: the property tests, random seeds, FC_SHAKE (10) times their runs (test/setup/fast-check-shake.ts).
export default mergeConfig(
  base,
  defineConfig({ test: { setupFiles: ['test/setup/fast-check-shake.ts'], testTimeout: 1_800_000 } }),
);

import type fc from 'fast-check';
import { vi } from 'vitest';

// `npm run test:shake`: every property runs FC_SHAKE times (10 by default) its own number of runs, from a
// random seed, to look for counterexamples the fixed seed of `npm test` does not reach.
vi.mock('fast-check', async (importOriginal) => {
  const real = await importOriginal<{ default: typeof fc }>();
  const factor = Number(process.env.FC_SHAKE ?? 10);
  const assert = ((property: fc.IRawProperty<unknown>, params?: fc.Parameters<unknown>) =>
    real.default.assert(property, {
      ...params,
      numRuns: Math.ceil((params?.numRuns ?? 100) * factor),
    })) as typeof fc.assert;
  const shaken = { ...real.default, assert };
  return { ...real, ...shaken, default: shaken };
});

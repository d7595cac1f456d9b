import fc from 'fast-check';

// Property tests run from one fixed seed by default, so a commit's test run is the same here and in CI: a
// counterexample is found by someone looking for it (`npm run test:shake`, random seeds and ten times the
// runs), not by the run that lands a change. `FC_SEED=<n>` replays a seed a failure printed;
// `FC_SEED=random` draws one per property, as fast-check does by default.
const FIXED_SEED = 20_261_128;
const given = process.env.FC_SEED;
if (given !== 'random') {
  const seed = given === undefined || given === '' ? FIXED_SEED : Number(given);
  if (!Number.isSafeInteger(seed)) throw new Error(`FC_SEED=${given}: give an integer, or "random"`);
  fc.configureGlobal({ ...fc.readConfigureGlobal(), seed });
}

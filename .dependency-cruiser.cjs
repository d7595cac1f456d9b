// Import rules of src/ (docs/architecture.md): no import circles, and the stages stack as the pipeline
// reads them — extract → normalize → warehouse → sync — so a lower stage never imports a higher one.
// The shared folders (schema, util, config, upstream) import no stage. Run by `npm run lint`.
const stage = (folder) => `^src/${folder}/`;

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'No import circle, type-only ones included: a circle of types is a circle of concepts.',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'extract-imports-no-later-stage',
      severity: 'error',
      comment: 'extract/ turns bytes into raw lines and CSV rows; it knows nothing of what follows.',
      from: { path: stage('extract') },
      to: { path: [stage('normalize'), stage('warehouse'), stage('sync')] },
    },
    {
      name: 'normalize-imports-no-later-stage',
      severity: 'error',
      comment: 'normalize/ turns raw lines and rows into staged rows and rejects, without the warehouse.',
      from: { path: stage('normalize') },
      to: { path: [stage('warehouse'), stage('sync')] },
    },
    {
      name: 'warehouse-imports-no-runner',
      severity: 'error',
      comment: 'warehouse/ stages, merges and records runs; the runner (sync/) drives it, not the reverse.',
      from: { path: stage('warehouse') },
      to: { path: stage('sync') },
    },
    {
      name: 'shared-folders-import-no-stage',
      severity: 'error',
      comment: 'schema/, util/, config/ and upstream/ serve every stage and import none.',
      from: { path: ['^src/(schema|util|config|upstream)/'] },
      to: { path: [stage('extract'), stage('normalize'), stage('warehouse'), stage('sync')] },
    },
    {
      name: 'shared-folders-stack',
      severity: 'error',
      comment: 'util/ is the bottom of the shared folders: it imports none of schema/, config/, upstream/.',
      from: { path: '^src/util/' },
      to: { path: '^src/(schema|config|upstream)/' },
    },
    {
      name: 'config-imports-no-upstream',
      severity: 'error',
      comment: 'config/ and schema/ sit below the HTTP layer (upstream/), which builds on them.',
      from: { path: '^src/(config|schema)/' },
      to: { path: '^src/upstream/' },
    },
    {
      name: 'pipeline-imports-no-top',
      severity: 'error',
      comment:
        'The pipeline stages and the shared folders know nothing of what sits on top: alerts/, daemon/, reader/, cli/, simulator/.',
      from: { path: ['^src/(extract|normalize|warehouse|sync|schema|util|config|upstream)/'] },
      to: { path: ['^src/(alerts|daemon|reader|cli|simulator)/'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};

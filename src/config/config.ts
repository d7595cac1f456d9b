import { addSecret } from '../util/redact.js';
import { z } from 'zod';
import type { ExtraLimits } from '../schema/value-rules.js';
import { SyncError } from '../util/errors.js';
import { safeUrl } from '../upstream/safe-url.js';
import { SETTINGS, type SettingDef, type SettingKey } from './settings.js';

type Schemas = { [K in SettingKey]: (typeof SETTINGS)[K]['schema'] };

/** The parsed, frozen configuration. Units are in the names (`…Ms` milliseconds, `…Bytes` bytes). */
export type Config = Readonly<{ [K in SettingKey]: z.output<Schemas[K]> }>;

/** Values given on the command line; they win over the environment. `undefined` means "not given". */
export type ConfigOverrides = Partial<Record<SettingKey, string | number | boolean | undefined>>;

const schema = z.object(
  Object.fromEntries(Object.entries(SETTINGS).map(([key, def]) => [key, def.schema])) as Schemas,
);

/**
 * Parses the configuration once: flags (`overrides`) over environment variables over defaults.
 * Empty environment values count as unset.
 *
 * @throws SyncError `CONFIG_INVALID` naming every bad variable, its value and what is allowed,
 *   before any work starts.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: ConfigOverrides = {}): Config {
  const raw: Record<string, unknown> = {};
  const origin: Record<string, string> = {};
  for (const [key, def] of Object.entries(SETTINGS)) {
    const flag = overrides[key as SettingKey];
    const fromEnv = env[def.env];
    if (flag !== undefined) {
      raw[key] = flag;
      origin[key] = (def as SettingDef).flag ?? `--${kebab(key)}`;
    } else if (fromEnv !== undefined && fromEnv !== '') {
      raw[key] = fromEnv;
      origin[key] = def.env;
    }
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const key = String(issue.path[0]) as SettingKey;
      const def = SETTINGS[key];
      const where = origin[key] ?? def.env;
      const shown = key === 'apiKey' ? '[redacted]' : JSON.stringify(raw[key]);
      return `${where}=${shown} is not valid: expected ${def.allowed}`;
    });
    throw new SyncError('CONFIG_INVALID', `Invalid configuration:\n  ${problems.join('\n  ')}`, {
      context: { problems },
    });
  }
  const config = Object.freeze(parsed.data) as Config;
  registerSecrets(config);
  return config;
}

/** Registers the config's secrets with redact.ts: the API key and the base URL's credentials. */
function registerSecrets(config: Config): void {
  addSecret(config.apiKey);
  if (config.baseUrl !== undefined && URL.canParse(config.baseUrl)) {
    const url = new URL(config.baseUrl);
    addSecret(decodeURIComponent(url.password));
    addSecret(url.password);
    addSecret(decodeURIComponent(url.username));
  }
}

/** The same config with the given keys replaced (validated again); the original is untouched. */
export function withOverrides(config: Config, overrides: ConfigOverrides): Config {
  const env: NodeJS.ProcessEnv = {};
  const asOverrides: ConfigOverrides = {};
  for (const [key, value] of Object.entries(config)) {
    if (value !== undefined) asOverrides[key as SettingKey] = value as string | number | boolean;
  }
  return loadConfig(env, { ...asOverrides, ...overrides });
}

/** One row of `reports-sync config`: a setting by its variable name, its value shown safely, and where it came from. */
export interface EffectiveSetting {
  env: string;
  /** The value; secrets as `[redacted]`, URLs without credentials (safeUrl); `undefined` when unset. */
  value: string | number | boolean | undefined;
  source: 'environment' | 'default';
}

/**
 * The effective configuration by environment variable name, for printing: the API key redacted, the base
 * URL without its user-info or credential-like query parameters (the same rule as logs and the run log).
 */
export function effectiveSettings(config: Config, env: NodeJS.ProcessEnv = process.env): EffectiveSetting[] {
  return Object.entries(SETTINGS).map(([key, def]) => {
    const raw = config[key as SettingKey] as string | number | boolean | undefined;
    let value = raw;
    if (raw !== undefined && key === 'apiKey') value = '[redacted]';
    else if (typeof raw === 'string' && /^https?:\/\//i.test(raw)) value = safeUrl(raw).replace(/\/$/, '');
    const given = env[def.env];
    return { env: def.env, value, source: given !== undefined && given !== '' ? 'environment' : 'default' };
  });
}

/** Markdown table of every setting, for docs/configuration.md (`reports-sync config --markdown`). */
export function settingsMarkdown(): string {
  const defaults = schema.parse({});
  const rows = Object.entries(SETTINGS).map(([key, def]: [string, SettingDef]) => {
    const value = def.shownDefault ?? defaults[key as SettingKey];
    const shown = value === undefined ? '(unset)' : `\`${String(value)}\``;
    return `| \`${def.env}\` | ${shown} | ${def.doc} |`;
  });
  return ['| variable | default | meaning |', '|---|---|---|', ...rows].join('\n');
}

function kebab(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

/** Throws `CONFIG_INVALID` when no upstream base URL is configured. */
export function requireBaseUrl(config: Config): string {
  if (!config.baseUrl) {
    throw new SyncError(
      'CONFIG_INVALID',
      'No upstream configured: set REPORTS_BASE_URL (or pass --base-url), e.g. REPORTS_BASE_URL=https://reports.example.org',
    );
  }
  return config.baseUrl;
}

/** `REPORTS_*` names read outside the settings: job schedules (daemon/load-jobs.ts) and the test failpoint. */
const OTHER_ENV = [/^REPORTS_SCHEDULE_/, /^REPORTS_FAILPOINT$/];

/**
 * The `REPORTS_*` variables of `env` that no setting reads (a typo such as `REPORTS_RECENT_PAGESIZE` would
 * otherwise change nothing, silently), each as a sentence naming the closest setting when one is near.
 */
export function unknownEnvNames(env: NodeJS.ProcessEnv): string[] {
  const known = Object.values(SETTINGS).map((d) => d.env);
  return Object.keys(env)
    .filter(
      (name) => name.startsWith('REPORTS_') && !known.includes(name) && !OTHER_ENV.some((p) => p.test(name)),
    )
    .sort()
    .map((name) => {
      const near = known.map((k) => ({ k, d: editDistance(name, k) })).sort((a, b) => a.d - b.d)[0];
      const hint = near && near.d <= 3 ? ` (did you mean ${near.k}?)` : '';
      return `${name} is not a setting and is ignored${hint}: see docs/configuration.md`;
    });
}

/** Levenshtein distance of two short strings. */
function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row[b.length]!;
}

/**
 * The URL of the API path `path` (e.g. `/api/v1/public/reports.ndjson`) under the base URL: the path goes
 * after the base's own path, and a query the base URL carries (an access token some services take there)
 * is kept, never followed by the path.
 *
 * @throws SyncError `CONFIG_INVALID` when no base URL is configured
 */
export function apiUrl(config: Config, path: string): URL {
  const url = new URL(requireBaseUrl(config));
  url.pathname = `${url.pathname.replace(/\/+$/, '')}${path}`;
  return url;
}

/** The bounds on a record's unknown fields (`REPORTS_EXTRA_MAX_*`), as the validator takes them. */
export function extraLimits(config: Config): ExtraLimits {
  return { maxDepth: config.extraMaxDepth, maxKeys: config.extraMaxKeys, maxBytes: config.extraMaxBytes };
}

import { addSecret } from '../util/redact.js';
import { z } from 'zod';
import type { ExtraLimits } from '../schema/value-rules.js';
import type { UpstreamReading } from '../schema/upstream-reading.js';
import { SyncError } from '../util/errors.js';
import { safeUrl } from '../util/safe-url.js';
import { SETTINGS, webhookUrlList, type SettingDef, type SettingKey } from './settings.js';

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
    const name = envNameGiven(def as SettingDef, env);
    if (flag !== undefined) {
      raw[key] = flag;
      origin[key] = (def as SettingDef).flag ?? `--${kebab(key)}`;
    } else if (name !== undefined) {
      raw[key] = env[name];
      origin[key] = name;
    }
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const key = String(issue.path[0]) as SettingKey;
      const def = SETTINGS[key];
      const where = origin[key] ?? def.env;
      const shown = (def as SettingDef).secret === true ? '[redacted]' : JSON.stringify(raw[key]);
      // A refinement's own words say what exactly is wrong ("foo" is no report field).
      const why =
        issue.code === 'custom' && !/^Invalid input/i.test(issue.message) ? ` (${issue.message})` : '';
      return `${where}=${shown} is not valid: expected ${def.allowed}${why}`;
    });
    throw new SyncError('CONFIG_INVALID', `Invalid configuration:\n  ${problems.join('\n  ')}`, {
      context: { problems },
    });
  }
  const config = Object.freeze(parsed.data) as Config;
  checkBaseUrlPrefix(config, origin.baseUrl ?? SETTINGS.baseUrl.env);
  registerSecrets(config);
  checkWebhookSecret(config);
  return config;
}

/**
 * A webhook other than a Slack incoming webhook is signed (Standard Webhooks): it needs the secret.
 * @throws SyncError `CONFIG_INVALID` saying how to make one
 */
function checkWebhookSecret(config: Config): void {
  const unsigned = webhookUrlList(config.alertWebhookUrls).filter((u) => !isSlackWebhook(u));
  if (unsigned.length === 0 || config.alertWebhookSecret !== undefined) return;
  throw new SyncError(
    'CONFIG_INVALID',
    `Invalid configuration:\n  REPORTS_ALERT_WEBHOOK_URL names ${unsigned.map(webhookLabel).join(', ')}, whose ` +
      'deliveries are signed (Standard Webhooks), but REPORTS_ALERT_WEBHOOK_SECRET is not set: set it to ' +
      'whsec_ and 32 random bytes in base64 (REPORTS_ALERT_WEBHOOK_SECRET="whsec_$(openssl rand -base64 32)") ' +
      'and give the receiver the same secret',
  );
}

/** Whether `url` is a Slack incoming webhook (hooks.slack.com): it takes a Slack message, unsigned. */
export function isSlackWebhook(url: string): boolean {
  return URL.canParse(url) && new URL(url).hostname.toLowerCase() === 'hooks.slack.com';
}

/**
 * A webhook URL as it may be shown (`reports-sync config`, logs, `alert_deliveries.endpoint`): its origin,
 * and `/[redacted]` for any path or query, which may hold a token (a Slack URL's path is its secret).
 */
export function webhookLabel(url: string): string {
  if (!URL.canParse(url)) return '[unparseable url]';
  const u = new URL(url);
  const rest = u.pathname.replace(/^\/$/, '') + u.search;
  return `${u.protocol}//${u.host}${rest === '' ? '' : '/[redacted]'}`;
}

/**
 * Refuses a base URL that ends with the prefix every API path starts with (`http://host/api/v1/public`):
 * the paths add it again (`/api/v1/public/api/v1/public/reports.ndjson`), and every request would answer
 * 404. The prefix is the folder the configured paths share, so it is `/api/v1/public` by default and
 * nothing when the paths were set without one.
 *
 * @throws SyncError `CONFIG_INVALID` naming the setting (`where`) and the URL to use instead
 */
function checkBaseUrlPrefix(config: Config, where: string): void {
  if (config.baseUrl === undefined || !URL.canParse(config.baseUrl)) return;
  const url = new URL(config.baseUrl);
  const base = url.pathname.replace(/\/+$/, '');
  const prefix = sharedFolder([config.ndjsonPath, config.csvPath, config.statsPath, config.listPath]);
  if (prefix === '' || !base.endsWith(prefix)) return;
  url.pathname = base.slice(0, base.length - prefix.length) || '/';
  const root = safeUrl(url).replace(/\/$/, '');
  throw new SyncError(
    'CONFIG_INVALID',
    `Invalid configuration:\n  ${where}=${safeUrl(config.baseUrl)} ends with ${prefix}, which reports-sync adds ` +
      `to every request itself (REPORTS_NDJSON_PATH=${config.ndjsonPath}): give the service's root, ${root}`,
    { context: { setting: where, prefix, suggested: root } },
  );
}

/** The folder the paths share, by whole segments (`/api/v1/public` for the default paths), or ''. */
function sharedFolder(paths: string[]): string {
  const split = paths.map((p) =>
    p
      .split('/')
      .filter((s) => s !== '')
      .slice(0, -1),
  );
  const first = split[0] ?? [];
  let n = 0;
  while (n < first.length && split.every((s) => s[n] === first[n])) n++;
  return n === 0 ? '' : `/${first.slice(0, n).join('/')}`;
}

/** The variable that sets `def` in `env`: its name, else its former name, when given and not empty. */
function envNameGiven(def: SettingDef, env: NodeJS.ProcessEnv): string | undefined {
  for (const name of [def.env, def.formerEnv]) {
    if (name !== undefined && env[name] !== undefined && env[name] !== '') return name;
  }
  return undefined;
}

/** Registers the config's secrets with redact.ts: the API key and the base URL's credentials. */
function registerSecrets(config: Config): void {
  addSecret(config.apiKey);
  addSecret(config.alertWebhookSecret);
  for (const url of webhookUrlList(config.alertWebhookUrls)) {
    addSecret(url);
    if (!URL.canParse(url)) continue;
    const u = new URL(url);
    if (u.pathname.length > 1) addSecret(u.pathname.slice(1));
    if (u.search.length > 1) addSecret(u.search.slice(1));
  }
  if (config.postgresUrl !== undefined && URL.canParse(config.postgresUrl)) {
    const url = new URL(config.postgresUrl);
    addSecret(decodeURIComponent(url.password));
    addSecret(url.password);
  }
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
    if (raw !== undefined && key === 'alertWebhookUrls')
      value = webhookUrlList(String(raw)).map(webhookLabel).join(' ');
    else if (raw !== undefined && (def as SettingDef).secret === true) value = '[redacted]';
    else if (typeof raw === 'string' && /^https?:\/\//i.test(raw)) value = safeUrl(raw).replace(/\/$/, '');
    const given = envNameGiven(def as SettingDef, env);
    return { env: def.env, value, source: given !== undefined ? 'environment' : 'default' };
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

/** `REPORTS_*` names read outside the settings: job schedules and freshness objectives (daemon/load-jobs.ts) and the test failpoint. */
const OTHER_ENV = [/^REPORTS_SCHEDULE_/, /^REPORTS_FRESHNESS_/, /^REPORTS_FAILPOINT$/];

/**
 * What the environment's `REPORTS_*` names call for, as sentences to print as warnings: a former name of a
 * setting (read, or ignored when the new name is set too), then {@link unknownEnvNames}.
 */
export function envWarnings(env: NodeJS.ProcessEnv): string[] {
  const former: string[] = [];
  for (const def of Object.values(SETTINGS) as SettingDef[]) {
    const old = def.formerEnv;
    if (old === undefined || env[old] === undefined || env[old] === '') continue;
    former.push(
      env[def.env] !== undefined && env[def.env] !== ''
        ? `${old} is ignored: ${def.env}, its new name, is set too; remove ${old}`
        : `${old} is the former name of ${def.env}: it is read for now, rename it to ${def.env}`,
    );
  }
  return [...former, ...unknownEnvNames(env)];
}

/**
 * The `REPORTS_*` variables of `env` that no setting reads (a typo such as `REPORTS_RECENT_PAGESIZE` would
 * otherwise change nothing, silently), each as a sentence naming the closest setting when one is near.
 * Former names of settings are not unknown (see {@link envWarnings}).
 */
export function unknownEnvNames(env: NodeJS.ProcessEnv): string[] {
  const known = (Object.values(SETTINGS) as SettingDef[]).flatMap((d) =>
    d.formerEnv === undefined ? [d.env] : [d.env, d.formerEnv],
  );
  return Object.keys(env)
    .filter(
      (name) => name.startsWith('REPORTS_') && !known.includes(name) && !OTHER_ENV.some((p) => p.test(name)),
    )
    .sort()
    .map((name) => {
      const current = Object.values(SETTINGS).map((d) => d.env);
      const near = current.map((k) => ({ k, d: editDistance(name, k) })).sort((a, b) => a.d - b.d)[0];
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

/**
 * The upstream's own field names and time zone (`REPORTS_FIELD_NAMES`, `REPORTS_SOURCE_TIME_ZONE`) as the
 * validator reads them (schema/upstream-reading.ts): `fieldNames` maps each upstream name to its field.
 */
export function upstreamReadingOf(config: Config): UpstreamReading {
  const fieldNames: Record<string, string> = {};
  for (const pair of config.fieldNames.split(',')) {
    const [field, name] = pair.split('=').map((p) => p.trim());
    if (field && name) fieldNames[name] = field;
  }
  return { fieldNames, timeZone: config.sourceTimeZone };
}

/** The bounds on a record's unknown fields (`REPORTS_EXTRA_MAX_*`), as the validator takes them. */
export function extraLimits(config: Config): ExtraLimits {
  return { maxDepth: config.extraMaxDepth, maxKeys: config.extraMaxKeys, maxBytes: config.extraMaxBytes };
}

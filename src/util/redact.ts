/**
 * The one place secrets are taken out of text (docs/guarantees.md, "Secrets"): the API key and the
 * credentials of a URL (`user:pass@`). Everything that writes text an upstream or a user could have
 * put a secret in goes through {@link redactSecrets}: the logger's output stream (every line, message and
 * error stack included), SyncError's message and context, `rejected_records` (raw text, record id, issues)
 * and `sync_runs.error`.
 *
 * The secrets are registered by `loadConfig` (the API key, the base URL's user and password), so a config
 * loaded anywhere in the process protects every later line. Registration is per thread: decode workers
 * send their rejects and errors to the main thread, which redacts them.
 */

const secrets = new Set<string>();
const secretBytes: Buffer[] = [];

/** Shortest value registered: a one- or two-character "secret" would blank out ordinary text. */
const MIN_SECRET_LENGTH = 4;

/** `scheme://user:pass@` and `scheme://user@` in any text. */
const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@"'<>]+@/gi;

/** Marks `value` as secret from now on in this thread (ignored when empty or shorter than 4 characters). */
export function addSecret(value: string | undefined): void {
  if (value === undefined || value.length < MIN_SECRET_LENGTH) return;
  // The forms it takes as text, inside a JSON string and in a URL.
  for (const form of [value, JSON.stringify(value).slice(1, -1), encodeURIComponent(value)]) {
    if (secrets.has(form)) continue;
    secrets.add(form);
    secretBytes.push(Buffer.from(form, 'utf8'));
  }
}

/** True when UTF-8 `bytes` hold a registered secret (a cheap check before decoding them to redact). */
export function holdsSecret(bytes: Uint8Array): boolean {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return secretBytes.some((s) => buf.includes(s));
}

/**
 * `text` with every registered secret (raw, JSON-escaped or percent-encoded) replaced by `[redacted]` and
 * URL credentials by `[redacted]@`. Longer secrets go first, so one that contains another is not left half
 * visible.
 */
export function redactSecrets(text: string): string {
  let out = text.includes('://') ? text.replace(URL_CREDENTIALS, '$1[redacted]@') : text;
  if (secrets.size === 0) return out;
  for (const secret of [...secrets].sort((a, b) => b.length - a.length)) {
    if (out.includes(secret)) out = out.split(secret).join('[redacted]');
  }
  return out;
}

/** {@link redactSecrets} over every string inside a JSON-able value (a copy; other values unchanged). */
export function redactDeep<T>(value: T): T {
  if (typeof value === 'string') return redactSecrets(value) as T;
  if (Array.isArray(value)) return value.map((v: unknown) => redactDeep(v)) as T;
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactDeep(v)])) as T;
  }
  return value;
}

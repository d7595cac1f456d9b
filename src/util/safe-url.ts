/**
 * A URL as it may appear in logs, errors and the run log: user-info removed and the values of query
 * parameters that look like credentials ({@link CREDENTIAL_PARAM}: `key`, `token`, `api_key`, `secret`,
 * `sig`, `client_secret`, …) replaced. The API key itself travels in a header and never in a URL, this is defence in depth.
 */
// Names of query parameters that carry credentials in common APIs (signed URLs, OAuth clients, keys).
const CREDENTIAL_PARAM =
  /^(api[-_]?key|key|token|access[-_]?token|auth|authorization|password|secret|client[-_]?secret|access[-_]?key|sig|signature|x-amz-signature|x-amz-credential)$/i;

export function safeUrl(url: string | URL): string {
  let u: URL;
  try {
    u = new URL(String(url));
  } catch {
    return '[unparseable url]';
  }
  u.username = '';
  u.password = '';
  for (const name of [...u.searchParams.keys()]) {
    if (CREDENTIAL_PARAM.test(name)) u.searchParams.set(name, '[redacted]');
  }
  return u.toString();
}

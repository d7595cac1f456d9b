/**
 * A URL as it may appear in logs, errors and the run log: user-info removed and the values of query
 * parameters that look like credentials (`key`, `token`, `apikey`, `api_key`, `password`, `secret`)
 * replaced. The API key itself travels in a header and never in a URL, this is defence in depth.
 */
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
    if (/^(api[-_]?key|key|token|access[-_]?token|password|secret)$/i.test(name))
      u.searchParams.set(name, '[redacted]');
  }
  return u.toString();
}

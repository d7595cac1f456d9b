/**
 * The target of the `rel="next"` link of an HTTP `Link` header (RFC 8288 §3), resolved against `base`
 * (the URL that answered, after redirects), or `undefined` when there is none.
 *
 * Accepts several link-values in one header or several headers, URIs holding commas or semicolons inside
 * `<…>`, quoted or bare `rel` values, several relation types in one `rel` (`rel="next last"`), and any case
 * (`REL=Next`). A link whose target cannot be parsed as a URL is ignored, as RFC 8288 §3 allows.
 *
 * @example
 * nextLink('<https://x.org/r.csv?page=2>; rel="next", <https://x.org/r.csv?page=9>; rel="last"', base)
 * // → URL https://x.org/r.csv?page=2
 */
export function nextLink(header: string | string[] | undefined, base: URL): URL | undefined {
  if (header === undefined) return undefined;
  for (const value of Array.isArray(header) ? header : [header]) {
    for (const link of parseLinks(value)) {
      const rel = link.params.get('rel');
      if (rel === undefined || !rel.toLowerCase().split(/\s+/).includes('next')) continue;
      if (URL.canParse(link.target, base.href)) return new URL(link.target, base);
    }
  }
  return undefined;
}

interface Link {
  target: string;
  /** Parameter names lower-cased; the first occurrence wins (RFC 8288 §3.3 for `rel`). */
  params: Map<string, string>;
}

/** Splits one `Link` header value into link-values: `<target>` followed by `; name=value` parameters. */
function parseLinks(value: string): Link[] {
  const links: Link[] = [];
  let i = 0;
  const n = value.length;
  const skipSpace = () => {
    while (i < n && (value[i] === ' ' || value[i] === '\t')) i++;
  };
  while (i < n) {
    skipSpace();
    if (value[i] === ',') {
      i++;
      continue;
    }
    if (value[i] !== '<') {
      // Not a link-value: skip to the next comma outside quotes.
      skipValue();
      continue;
    }
    const close = value.indexOf('>', i + 1);
    if (close === -1) break;
    const link: Link = { target: value.slice(i + 1, close).trim(), params: new Map() };
    i = close + 1;
    for (;;) {
      skipSpace();
      if (value[i] !== ';') break;
      i++;
      skipSpace();
      const nameStart = i;
      while (i < n && !'=;,'.includes(value[i] ?? '')) i++;
      const name = value.slice(nameStart, i).trim().toLowerCase();
      let param = '';
      if (value[i] === '=') {
        i++;
        skipSpace();
        if (value[i] === '"') {
          i++;
          while (i < n && value[i] !== '"') {
            if (value[i] === '\\' && i + 1 < n) i++;
            param += value[i];
            i++;
          }
          i++;
        } else {
          const start = i;
          while (i < n && value[i] !== ';' && value[i] !== ',') i++;
          param = value.slice(start, i).trim();
        }
      }
      if (name !== '' && !link.params.has(name)) link.params.set(name, param);
    }
    links.push(link);
  }
  return links;

  function skipValue(): void {
    let quoted = false;
    while (i < n) {
      const c = value[i];
      if (c === '"') quoted = !quoted;
      else if (c === ',' && !quoted) return;
      i++;
    }
  }
}

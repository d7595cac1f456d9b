import { nextLink } from '../../upstream/link-header.js';

// Where list APIs name their next page in the body: `{"data": […], "next": "…"}` (Django REST framework,
// Open Library), `next_page_url` (Laravel), `links.next` (JSON:API), `_links.next.href` (HAL),
// `meta.next`, `paging.next` (Graph API), `pagination.next_url`.
const NEXT_KEYS = ['next', 'next_url', 'nextUrl', 'next_page_url', 'nextPageUrl', 'nextLink'];
const HOLDERS = ['links', '_links', 'meta', 'paging', 'pagination'];

/**
 * The next page a list page names, resolved against `base` (the URL that answered, after redirects): the
 * `Link: <…>; rel="next"` header (RFC 8288), else a next-page URL in the body of a wrapped list (see
 * {@link NEXT_KEYS}, top level or under `links`, `_links`, `meta`, `paging`, `pagination`; a string or an
 * object's `href`). Only text that reads as a URL counts: an absolute `http(s)` URL, a path (`/…`) or a
 * query (`?…`); a bare cursor token (`"next": "abc123"`) or a page number names no URL and is ignored.
 * `undefined` when the page names no next page (`"next": null` included).
 */
export function listNextPage(
  linkHeader: string | string[] | undefined,
  body: unknown,
  base: URL,
): URL | undefined {
  return nextLink(linkHeader, base) ?? bodyNext(body, base);
}

function bodyNext(body: unknown, base: URL): URL | undefined {
  if (!isObject(body)) return undefined;
  const holders = [body, ...HOLDERS.map((k) => body[k]).filter(isObject)];
  for (const holder of holders) {
    for (const key of NEXT_KEYS) {
      const url = asUrl(holder[key], base);
      if (url) return url;
    }
  }
  return undefined;
}

function asUrl(value: unknown, base: URL): URL | undefined {
  const text = isObject(value) ? value.href : value;
  if (typeof text !== 'string' || !/^(https?:\/\/|\/|\?)/i.test(text.trim())) return undefined;
  return URL.canParse(text.trim(), base.href) ? new URL(text.trim(), base) : undefined;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

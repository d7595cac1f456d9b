import { isUtf8 } from 'node:buffer';
import { arrayElementTexts, scanJsonObject, type JsonField } from '../../schema/json-text.js';
import { isRestyledName, restyledObjectText } from '../../schema/field-names.js';
import { charsetOf, toUtf8 } from '../../upstream/charset.js';
import { header, networkError, notAtPath, refusedPageSize } from '../../upstream/http-answers.js';
import { openStream, type OpenResponse } from '../../upstream/open-stream.js';
import { requestOptions } from '../../upstream/request-options.js';
import { SyncError } from '../../util/errors.js';
import type { ReadContext } from '../export-source.js';
import { pageValidator } from './export-validators.js';
import { listNextPage } from './list-next-page.js';

// A list page is held whole to parse it as one JSON array: bounded so a runaway body cannot exhaust memory.
const MAX_PAGE_BYTES = 256 * 1024 * 1024;

/** One list page: its elements parsed and as sent, with what the response said of itself. */
export interface ListPage {
  values: unknown[];
  texts: string[];
  /** Body size in bytes. */
  bytes: number;
  safeUrl: string;
  etag?: string | undefined;
  lastModified?: string | undefined;
  /** The next page the answer names (`Link: rel="next"`, or a next-page URL in a wrapped body), if any. */
  next?: URL | undefined;
}

/**
 * GETs one list page and parses it as a JSON array, with each element's text as sent.
 *
 * The body is decoded as the export pages are: a byte order mark decides, else the declared `charset`
 * (upstream/charset.ts), else UTF-8.
 *
 * @throws SyncError `LIST_INVALID` (a body over 256 MiB, not valid in its encoding, not JSON (retryable: a
 *   cut body) or not an array), `UNSUPPORTED_CHARSET`, `INVALID_CHARSET_DATA`, or what `openStream` throws
 */
export async function fetchPage(ctx: ReadContext, url: URL): Promise<ListPage> {
  const res = await openPage(ctx, url);
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_PAGE_BYTES) {
        throw new SyncError('LIST_INVALID', `The list page ${res.url} is over ${MAX_PAGE_BYTES} bytes`, {
          context: { url: res.url, limit: MAX_PAGE_BYTES },
        });
      }
      chunks.push(Buffer.from(chunk));
    }
  } catch (err) {
    throw networkError(err, res.url);
  } finally {
    res.body.destroy();
  }
  const bytes = toUtf8(Buffer.concat(chunks, size), charsetOf(header(res.headers, 'content-type')), res.url);
  // Text that is not valid in its encoding is refused, never read with substitutes (docs/guarantees.md).
  if (!isUtf8(bytes)) {
    throw new SyncError(
      'LIST_INVALID',
      `The list page ${res.url} is not valid UTF-8: nothing of it was loaded`,
      {
        context: { url: res.url },
      },
    );
  }
  // A leading BOM is dropped (RFC 8259 §8.1 lets a parser ignore it; JSON.parse does not).
  // A 204 (no content) is an empty list: a page past the end, or nothing published.
  const text = res.status === 204 ? '[]' : new TextDecoder('utf-8').decode(bytes); // the decoder drops a BOM
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (err) {
    throw new SyncError('LIST_INVALID', `The list page ${res.url} is not JSON (${(err as Error).message})`, {
      context: { url: res.url, excerpt: text.slice(0, 200) },
      retryable: true,
      cause: err,
    });
  }
  const items = listItems(body, text, res.url);
  return {
    ...items,
    bytes: size,
    safeUrl: res.url,
    ...pageValidator(res.headers),
    next: listNextPage(res.headers.link, body, res.finalUrl),
  };
}

/** Opens the list page; a refused `pageSize` names the setting that asked it. */
async function openPage(ctx: ReadContext, url: URL): Promise<OpenResponse> {
  try {
    return await openStream(
      url,
      requestOptions(ctx.config, ctx, url, { accept: 'application/json', deadline: 'page' }),
    );
  } catch (err) {
    const refused = refusedPageSize(err, 'REPORTS_RECENT_PAGE_SIZE', ctx.config.recentPageSize);
    throw url.searchParams.get('page') === '1' ? notAtPath(refused, 'REPORTS_LIST_PATH') : refused;
  }
}

/**
 * The reports of a list page: the body when it is an array, or the one array of an object wrapping it
 * (`{"data": […], "meta": {…}}`, `{"items": […], "total": 42}`: the response fields are not shown; among
 * several arrays, the one named as lists name their items, `data`, `items`, `results`, …), each
 * element with its text as sent (unknown fields keep their numbers' text, repeated keys are seen).
 *
 * @throws SyncError `LIST_INVALID` for anything else (naming the keys of an object)
 */
export function listItems(body: unknown, text: string, url: string): Pick<ListPage, 'values' | 'texts'> {
  return restyled(wrappedItems(body, text, url));
}

/**
 * The elements with top-level keys in another style (`created_at`, `ID`) renamed to the wire names
 * (schema/field-names.ts), so the stop rules read the same fields the decoders validate.
 */
function restyled(items: Pick<ListPage, 'values' | 'texts'>): Pick<ListPage, 'values' | 'texts'> {
  const { values, texts } = items;
  values.forEach((value, i) => {
    if (typeof value !== 'object' || value === null || Array.isArray(value) || texts[i] === undefined) return;
    if (!Object.keys(value).some(isRestyledName)) return;
    const renamed = restyledObjectText(texts[i], scanJsonObject(texts[i]));
    if (renamed === undefined) return;
    texts[i] = renamed;
    values[i] = JSON.parse(renamed);
  });
  return items;
}

/**
 * A wrapper that gives a key twice where reports may be (a name lists use, or one holding an array) is
 * refused: `JSON.parse` keeps the last value, the text shows both, and which is the page cannot be told.
 * A repeat elsewhere (`meta`, a `total`) holds no report and is let be.
 *
 * @throws SyncError `LIST_INVALID` naming the key
 */
function refuseRepeatedArray(fields: JsonField[], arrays: JsonField[], url: string, text: string): void {
  const repeated = fields.find(
    (f, i) =>
      fields.findIndex((g) => g.key === f.key) !== i &&
      (ITEM_KEYS.has(f.key) || arrays.some((a) => a.key === f.key)),
  );
  if (repeated === undefined) return;
  throw new SyncError(
    'LIST_INVALID',
    `The list page ${url} gives the key ${JSON.stringify(repeated.key)} twice: which of its values is the page cannot be told`,
    { context: { url, excerpt: text.slice(0, 200) } },
  );
}

/** Names under which list APIs put their items (`{"data": […]}`), also read for an NDJSON export sent as one document. */
export const ITEM_KEYS: ReadonlySet<string> = new Set([
  'data',
  'items',
  'results',
  'reports',
  'records',
  'rows',
  'content',
  'elements',
]);

function wrappedItems(body: unknown, text: string, url: string): Pick<ListPage, 'values' | 'texts'> {
  if (Array.isArray(body)) return { values: body, texts: arrayElementTexts(text) ?? [] };
  if (typeof body === 'object' && body !== null) {
    const trimmed = text.trim();
    // Keys are compared here only at the top: a repeat inside an element is that element's to quarantine.
    const fields = scanJsonObject(trimmed, false).fields;
    const arrays = fields.filter((f) => trimmed[f.start] === '[');
    refuseRepeatedArray(fields, arrays, url, text);
    // Several arrays (`{"data": […], "errors": []}`): the one under a name lists use, when one is.
    const named = arrays.filter((f) => ITEM_KEYS.has(f.key));
    const only = arrays.length === 1 ? arrays[0] : named.length === 1 ? named[0] : undefined;
    if (only) {
      const values = (body as Record<string, unknown>)[only.key] as unknown[];
      return { values, texts: arrayElementTexts(trimmed.slice(only.start, only.end)) ?? [] };
    }
    // `{"data": null}`: no array, and the name lists use says there are no items.
    if (
      arrays.length === 0 &&
      fields.some((f) => ITEM_KEYS.has(f.key) && trimmed.startsWith('null', f.start))
    ) {
      return { values: [], texts: [] };
    }
    const keys = Object.keys(body).slice(0, 10).join(', ');
    throw new SyncError(
      'LIST_INVALID',
      `The list page ${url} is an object (keys: ${keys}) without exactly one array of reports in it`,
      { context: { url, excerpt: text.slice(0, 200) } },
    );
  }
  throw new SyncError('LIST_INVALID', `The list page ${url} is not a JSON array of reports`, {
    context: { url, excerpt: text.slice(0, 200) },
  });
}

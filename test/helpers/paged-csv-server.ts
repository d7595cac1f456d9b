import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { startRawServer, type RawServer } from './raw-server.js';

/** How a {@link startPagedCsvServer} misbehaves (all off: a well-behaved paged CSV export). */
export interface PagedCsvOptions {
  /**
   * Send `ETag` (of the current id list) and `Last-Modified` on every page (default true); `per-page`: an
   * `ETag` of each page's own body (as servers hashing their answer do); `stamped`: `Last-Modified` and
   * `Date` both the time of the answer.
   */
  validators?: boolean | 'per-page' | 'stamped';
  /** Serve at most this many rows per page, whatever `pageSize` asks (a silent server cap). */
  cap?: number;
  /** Send `Link: rel="next"` while more rows follow. Default false. */
  links?: boolean;
  /**
   * Page numbers answered header-only. `shift`: the data moves one page on (no row lost, as if an empty
   * page were inserted); otherwise the page's rows are simply not served.
   */
  emptyPages?: { at: number[]; shift: boolean };
  /** Called before a page is served (e.g. to unpublish a row mid-export). */
  beforePage?: (page: number) => void;
  /** A page past the last one answers the last page again (a server clamping the page number). */
  clampPastEnd?: boolean;
  /** The status answered for a page past the last one (instead of a header-only page). */
  pastEndStatus?: number;
  /** Every page links on, past the last row too (with `links`): the end is an empty page or `pastEndStatus`. */
  linksPastEnd?: boolean;
  /** The last page's `Link: rel="next"` leads back to this page (with `links`): a server whose links loop. */
  linkBackTo?: number;
  /** Bodies end by closing the connection: no `Content-Length`, not chunked. */
  closeDelimited?: boolean;
  /** No `/stats` endpoint (404). */
  noStats?: boolean;
  /** The `/stats` total to answer whatever the rows (an upstream whose counters lag). */
  statsTotal?: number;
  /** Pages answered once with an error status (page → status), then served. */
  failOnce?: Map<number, number>;
  /** Answer a conditional request as an HTTP cache would: 304 when the page's ETag still matches. */
  conditional?: boolean;
  /** The first answer of page 1 holds only its first row (a close-delimited body cut at a line break). */
  cutFirstPageOnce?: boolean;
  /**
   * The first answer of page `page` holds only its first `keep` rows, ended at a line break (close-delimited:
   * a connection closed at a row's end; else a short answer, framed).
   */
  cutOnce?: { page: number; keep: number };
  /**
   * Bodies gzip-coded as one gzip member a line (RFC 1952 allows several), `Content-Encoding: gzip`: a
   * close-delimited body cut between rows then ends at a member's end and decodes cleanly.
   */
  gzipRows?: boolean;
  /** The body ends without a final line break (RFC 4180 §2.2 allows it), the header's too on an empty page. */
  noFinalLineBreak?: boolean;
  /**
   * The first `times` answers of page `page` end inside the last row's last cell (a connection cut there,
   * each time a few bytes earlier than the time before): the row still has all its cells.
   */
  cutLastCell?: { page: number; times: number };
  /** The line end of the header and rows (default CRLF). */
  lineEnd?: '\r\n' | '\n' | '\r';
}

/** A raw paged CSV export of `ids`, with `/stats` counting them; `ids` may be changed between requests. */
export interface PagedCsvServer extends RawServer {
  ids: string[];
}

const HEADER = 'id,status,destination,category,description,lat,lng,address,createdAt,updatedAt\r\n';

/** One valid CSV row for `id`. */
export function csvRow(id: string): string {
  return `${id},SUBMITTED,ROAD_CONTROL,POTHOLE,report ${id},52.5,13.4,Main St 1,2024-01-01T00:00:00Z,2024-01-02T00:00:00Z\r\n`;
}

/** Starts a paged CSV export of `ids` on 127.0.0.1 at the default paths. */
export async function startPagedCsvServer(
  ids: string[],
  options: PagedCsvOptions = {},
): Promise<PagedCsvServer> {
  const state = { ids: [...ids], cuts: 0 };
  const server = await startRawServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname.endsWith('/stats')) {
      if (options.noStats) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ total: options.statsTotal ?? state.ids.length }));
      return;
    }
    const asked = Number(url.searchParams.get('pageSize'));
    const page = Number(url.searchParams.get('page'));
    options.beforePage?.(page);
    const failure = options.failOnce?.get(page);
    if (failure !== undefined) {
      options.failOnce?.delete(page);
      return void res.writeHead(failure, { 'content-type': 'application/json' }).end('{"error":"try later"}');
    }
    // Of the list as served (after beforePage changed it): an honest server's validator names its content.
    const validators: Record<string, string> =
      options.validators === false || options.validators === 'per-page'
        ? {}
        : options.validators === 'stamped'
          ? { 'last-modified': new Date().toUTCString(), date: new Date().toUTCString() }
          : {
              etag: `"v-${state.ids.join('|').length}-${state.ids.length}"`,
              'last-modified': new Date(0).toUTCString(),
            };
    const size = Math.min(asked, options.cap ?? asked);
    const empties = options.emptyPages?.at ?? [];
    const shifted = options.emptyPages?.shift ? page - empties.filter((p) => p < page).length : page;
    const last = Math.max(1, Math.ceil(state.ids.length / size));
    const dataPage = options.clampPastEnd ? Math.min(shifted, last) : shifted;
    const rows = empties.includes(page) ? [] : state.ids.slice((dataPage - 1) * size, dataPage * size);
    const headers: Record<string, string> = { 'content-type': 'text/csv; charset=utf-8', ...validators };
    if (options.links && (options.linksPastEnd || dataPage * size < state.ids.length)) {
      headers.link = `<${url.pathname}?pageSize=${asked}&page=${page + 1}>; rel="next"`;
    } else if (options.links && options.linkBackTo !== undefined) {
      headers.link = `<${url.pathname}?pageSize=${asked}&page=${options.linkBackTo}>; rel="next"`;
    }
    if (options.pastEndStatus !== undefined && page > 1 && rows.length === 0) {
      return void res
        .writeHead(options.pastEndStatus, { 'content-type': 'application/json' })
        .end('{"error":"no such page"}');
    }
    const cut = options.cutFirstPageOnce && page === 1 && rows.length > 1;
    if (cut) options.cutFirstPageOnce = false;
    const cutAt = options.cutOnce?.page === page ? options.cutOnce.keep : undefined;
    if (cutAt !== undefined) options.cutOnce = undefined;
    const served = cut ? rows.slice(0, 1) : cutAt !== undefined ? rows.slice(0, cutAt) : rows;
    const lines = [HEADER, ...served.map(csvRow)].map((l) => l.replace(/\r\n$/, options.lineEnd ?? '\r\n'));
    if (options.noFinalLineBreak) lines.push(lines.pop()!.replace(/\r?\n$|\r$/, ''));
    const cutCell = options.cutLastCell?.page === page && options.cutLastCell.times-- > 0;
    // The last cell is a timestamp: 2 bytes more cut each time leave it shorter, never empty.
    if (cutCell)
      lines.push(
        lines
          .pop()!
          .replace(/\r?\n$|\r$/, '')
          .slice(0, -2 * ++state.cuts),
      );
    const body = options.gzipRows ? Buffer.concat(lines.map((l) => gzipSync(l))) : lines.join('');
    if (options.gzipRows) headers['content-encoding'] = 'gzip';
    if (options.validators === 'per-page')
      headers.etag = `"${createHash('sha1').update(body).digest('hex')}"`;
    if (options.conditional && headers.etag !== undefined && req.headers['if-none-match'] === headers.etag) {
      return void res.writeHead(304, { etag: headers.etag }).end();
    }
    if (options.closeDelimited) {
      const head = Object.entries({ ...headers, connection: 'close' }).map(([k, v]) => `${k}: ${v}\r\n`);
      return void res.socket?.end(
        Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\n${head.join('')}\r\n`), Buffer.from(body)]),
      );
    }
    res.writeHead(200, headers);
    res.end(body);
  });
  return Object.defineProperty(server, 'ids', {
    get: () => state.ids,
    set: (next: string[]) => {
      state.ids = next;
    },
  }) as PagedCsvServer;
}

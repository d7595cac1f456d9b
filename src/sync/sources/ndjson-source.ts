import { extractNdjson } from '../../extract/ndjson.js';
import { header, networkError, openStream } from '../../upstream/open-stream.js';
import { validateWireLine } from '../../schema/wire-line.js';
import { extraLimits, requireBaseUrl } from '../../config/config.js';
import { startDecoders } from '../../extract/decoders.js';
import { charsetOf, utf8Chunks } from '../../extract/charset.js';
import { countBytes } from '../count-bytes.js';
import { KnownLines } from '../known-lines.js';
import type { ExportSource, ReadContext } from '../export-source.js';
import { safeUrl } from '../../upstream/safe-url.js';
import { isNotModified } from '../conditional.js';

/**
 * The NDJSON export (`REPORTS_NDJSON_PATH`, default `/api/v1/public/reports.ndjson`; the seed does not
 * show the path, DESIGN.md §2): one streamed GET, one report per line. A conditional GET answered 304 yields
 * nothing and marks the run not modified.
 */
export const ndjsonSource: ExportSource = {
  name: 'ndjson',
  fullExport: true,
  validate: (value, raw, limits) => validateWireLine(raw, value, limits),
  async *read(ctx: ReadContext) {
    const url = `${requireBaseUrl(ctx.config)}${ctx.config.ndjsonPath}`;
    let res;
    try {
      res = await openStream(url, {
        dispatcher: ctx.dispatcher,
        apiKey: ctx.config.apiKey,
        maxRedirects: ctx.config.maxRedirects,
        signal: ctx.signal,
        headers: { accept: 'application/x-ndjson, application/json;q=0.9, */*;q=0.1', ...ctx.conditional },
        deadline: { ms: ctx.config.exportDeadlineMs, setting: 'REPORTS_EXPORT_DEADLINE_MS' },
      });
    } catch (err) {
      if (!ctx.conditional || !isNotModified(err)) throw err;
      ctx.markNotModified(safeUrl(url));
      return;
    }
    ctx.setExportInfo({
      url: res.url,
      etag: header(res.headers, 'etag'),
      lastModified: header(res.headers, 'last-modified'),
    });
    // JSON is UTF-8 (RFC 8259 §8.1), but a declared charset is honoured (or the export refused before
    // reading), never read as UTF-8 with U+FFFD.
    let body: AsyncIterable<Uint8Array>;
    try {
      body = utf8Chunks(
        countBytes(res.body, (n) => ctx.addBytes(n)),
        charsetOf(header(res.headers, 'content-type')),
        res.url,
      );
    } catch (err) {
      res.body.on('error', () => undefined); // the abort of an unread body is no failure of its own
      res.body.destroy();
      throw err;
    }
    const decoders = startDecoders(
      ctx.config.decodeWorkers,
      ctx.knownLines ?? (await KnownLines.empty('ndjson')),
      ctx.config.rejectRawMaxBytes,
      extraLimits(ctx.config),
    );
    try {
      yield* extractNdjson(body, {
        maxRecordBytes: ctx.config.maxRecordBytes,
        rejectRawMaxBytes: ctx.config.rejectRawMaxBytes,
        url: res.url,
        decoders,
      });
    } catch (err) {
      throw networkError(err, res.url);
    } finally {
      ctx.addWireBytes(res.wireBytes());
      res.body.destroy();
      await decoders.close();
    }
  },
};

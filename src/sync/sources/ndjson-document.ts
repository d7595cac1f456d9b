import { isUtf8 } from 'node:buffer';
import { SyncError } from '../../util/errors.js';
import { ITEM_KEYS, listItems } from './recent-list-page.js';

/**
 * Bytes an NDJSON export answered as one JSON document may hold: the document is parsed whole, so it is
 * bounded as a list page or a CSV page is (an export this large is read as NDJSON lines, streamed).
 */
export const DOCUMENT_MAX_BYTES = 256 * 1024 * 1024;

// A content type of plain JSON (`application/json`, `text/json`, `+json`), not one of the NDJSON types.
const PLAIN_JSON = /^(application|text)\/([\w.-]+\+)?json\s*(;|$)/i;

const BOM = [0xef, 0xbb, 0xbf];
const isSpace = (b: number | undefined) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;

/**
 * The export body as NDJSON lines. A service may answer the NDJSON path with one JSON document instead:
 * a JSON array of reports (no NDJSON line is an array), or, typed as plain JSON, an object wrapping the
 * array (`{"data": […], "meta": …}`, pretty-printed or on one line). Such a document is read whole (at
 * most {@link DOCUMENT_MAX_BYTES}) and its reports handed on one a line, each element's text as sent
 * (line breaks outside strings made spaces), so they are validated, quarantined (by element number, as
 * `line`) and staged as lines are. Anything else passes through untouched and streamed: only its first
 * bytes are looked at (its first line, for a plain-JSON answer starting with an object, up to
 * `maxFirstLine` bytes: a longer one is streamed, and quarantined as any over-long line is). A plain-JSON
 * answer whose first line is not JSON on its own (`{"data": [`) is read whole and taken as a document
 * when it parses as one, else as lines. A lone object line that is not UTF-8 is handed on as sent, so it
 * is quarantined as any such line is; a document that is not UTF-8 is refused whole, as a list page is
 * (never read with U+FFFD in place of its bytes).
 *
 * @param maxFirstLine bytes of a plain-JSON answer's first line held to decide (`REPORTS_MAX_RECORD_BYTES`)
 * @throws SyncError `NDJSON_DOCUMENT_INVALID` when the document is over the bound, is not UTF-8, is not
 *   JSON (retryable: a cut body), or holds no array of reports
 */
export async function* ndjsonLines(
  body: AsyncIterable<Uint8Array>,
  contentType: string | undefined,
  url: string,
  maxFirstLine: number,
): AsyncGenerator<Uint8Array> {
  const it = body[Symbol.asyncIterator]();
  const head: Buffer[] = [];
  let size = 0;
  const more = async (): Promise<Buffer | undefined> => {
    const r = await it.next();
    if (r.done) return undefined;
    const chunk = Buffer.from(r.value);
    head.push(chunk);
    size += chunk.length;
    return chunk;
  };
  const streamed = async function* () {
    yield* head;
    for (let r = await it.next(); !r.done; r = await it.next()) yield r.value;
  };
  const shape = new ShapeScan(PLAIN_JSON.test(contentType ?? ''), maxFirstLine);
  for (let chunk = await more(); chunk && shape.verdict === undefined;) {
    shape.scan(chunk);
    if (shape.verdict !== undefined || size > DOCUMENT_MAX_BYTES) break;
    chunk = await more();
  }
  const firstLine =
    shape.verdict === 'first-line' ? Buffer.concat(head).subarray(...shape.firstLine) : undefined;
  // Undecided at the end of the body (or past the bound): a lone object line is one JSON text.
  const lines = shape.verdict === 'lines' || (shape.verdict === undefined && !shape.seenObject);
  if (lines || (firstLine !== undefined && parsedOrUndefined(firstLine.toString()) !== undefined)) {
    yield* streamed();
    return;
  }
  while (size <= DOCUMENT_MAX_BYTES && (await more()));
  if (size > DOCUMENT_MAX_BYTES) {
    if (firstLine !== undefined) return yield* streamed(); // NDJSON whose first line is broken
    await it.return?.();
    throw invalid(url, `is one JSON document over ${DOCUMENT_MAX_BYTES} bytes`);
  }
  const bytes = Buffer.concat(head);
  if (firstLine !== undefined) {
    const value = isUtf8(bytes) ? parsedOrUndefined(new TextDecoder().decode(bytes)) : undefined;
    if (!wrapsReports(value)) return yield bytes; // NDJSON whose first line is broken
  }
  if (!isUtf8(bytes)) {
    // One line: NDJSON reading quarantines it as not UTF-8. A document's elements cannot be told apart
    // from its bytes: refused, as a list page is, rather than loaded with U+FFFD for what was sent.
    if (shape.verdict !== 'document' && !wrapsReports(parsedOrUndefined(new TextDecoder().decode(bytes)))) {
      yield bytes;
      return;
    }
    throw invalid(url, 'is one JSON document that is not valid UTF-8 (nothing of it was loaded)');
  }
  const text = new TextDecoder('utf-8').decode(bytes); // the decoder drops a BOM
  yield* documentLines(text, url, shape.verdict !== undefined);
}

/**
 * The reports of a JSON document as NDJSON lines. One object on one line (`multiLine` false) that wraps no
 * array of reports is a one-report export, handed on as its line.
 */
function* documentLines(text: string, url: string, multiLine: boolean): Generator<Uint8Array> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw invalid(url, `is neither NDJSON nor one JSON document (${(err as Error).message})`, true);
  }
  let texts: string[];
  if (!multiLine && !wrapsReports(value)) {
    texts = [text.trim()];
  } else {
    try {
      texts = listItems(value, text, url).texts;
    } catch (err) {
      throw invalid(url, `is one JSON document without an array of reports (${(err as Error).message})`);
    }
  }
  if (texts.length > 0) yield Buffer.from(`${texts.map((t) => t.replace(/[\r\n]/g, ' ')).join('\n')}\n`);
}

/**
 * Decides, chunk by chunk (each byte looked at once), whether a body is one JSON document: `document` at a
 * first byte `[` (past a BOM and white space), or, for a plain-JSON answer, a first line `{` alone;
 * `lines` at any other first byte, an object under another type, or a first line over `maxFirstLine`
 * bytes; `first-line` when a plain-JSON answer's first line holds more than `{` and a second line follows
 * (its bytes: {@link firstLine}; JSON on its own, it is NDJSON). A single object line with nothing after
 * it leaves {@link verdict} unset at the end of the body ({@link seenObject}).
 */
class ShapeScan {
  verdict: 'document' | 'lines' | 'first-line' | undefined;
  seenObject = false;
  /** Offsets of the first line (from its `{`, without its line break) once it ended. */
  firstLine: [number, number] = [0, 0];
  #offset = 0; // bytes scanned
  #phase: 'start' | 'first-line' | 'after' = 'start';
  #lineBlank = true;

  constructor(
    private readonly plainJson: boolean,
    private readonly maxFirstLine: number,
  ) {}

  scan(chunk: Buffer): void {
    for (let i = 0; i < chunk.length && this.verdict === undefined; i++, this.#offset++) {
      const b = chunk[i];
      if (this.#phase === 'start') {
        if (this.#offset < 3 && b === BOM[this.#offset]) continue;
        if (isSpace(b)) continue;
        if (b === 0x5b) this.verdict = 'document';
        else if (b !== 0x7b || !this.plainJson) this.verdict = 'lines';
        else {
          this.seenObject = true;
          this.firstLine[0] = this.#offset;
          this.#phase = 'first-line';
        }
      } else if (this.#phase === 'first-line') {
        if (b === 0x0a) {
          if (this.#lineBlank) this.verdict = 'document';
          this.firstLine[1] = this.#offset;
          this.#phase = 'after';
        } else if (this.#offset - this.firstLine[0] > this.maxFirstLine) this.verdict = 'lines';
        else if (!isSpace(b)) this.#lineBlank = false;
      } else if (!isSpace(b)) this.verdict = 'first-line'; // a second line
    }
  }
}

/** An object holding its reports in an array, and no report itself (it has no `id`). */
function wrapsReports(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const obj = value as Record<string, unknown>;
  if ('id' in obj) return false;
  return [...ITEM_KEYS].some((k) => Array.isArray(obj[k]));
}

function parsedOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function invalid(url: string, what: string, retryable = false): SyncError {
  return new SyncError(
    'NDJSON_DOCUMENT_INVALID',
    `The NDJSON export ${url} ${what}: set REPORTS_NDJSON_PATH to an export with one report per line, or sync the CSV export (--source csv)`,
    { context: { url }, retryable },
  );
}

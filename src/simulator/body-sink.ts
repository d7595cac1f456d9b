import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FaultOf } from './faults.js';

/** The byte-level faults a response body can carry (at most one of each; see faults.ts). */
export interface DeliveryFaults {
  stall?: FaultOf<'stall'> | undefined;
  reset?: FaultOf<'reset'> | undefined;
  cut?: FaultOf<'cut'> | undefined;
  chunkedCut?: FaultOf<'chunkedCut'> | undefined;
}

const LF = 0x0a;

/** True when any byte-level fault is set. */
export function hasDeliveryFaults(faults: DeliveryFaults): boolean {
  return Boolean(faults.stall ?? faults.reset ?? faults.cut ?? faults.chunkedCut);
}

/**
 * Writes a streamed response body with backpressure and applies the byte-level faults. Producers call
 * {@link write} with chunks (many lines each) until it returns `false` (client gone, or a fault ended the
 * body), then {@link end}.
 *
 * - normal: chunked transfer encoding through `res`;
 * - `stall`: headers (and `afterBytes` bytes), then nothing until the client or the simulator closes;
 * - `reset`: after `afterBytes` bytes the socket is reset (TCP RST);
 * - `chunkedCut`: after `afterBytes` bytes the socket is closed without the terminating zero-length chunk;
 * - `cut`: the response is written raw on the socket (`Connection: close`, no `Content-Length`, no chunked
 *   encoding) and the socket is closed cleanly mid-line at or just after `afterBytes` bytes; when the body
 *   is shorter, in the middle of its last line. A close-delimited body looks complete to HTTP: only the
 *   half line tells.
 */
export class BodySink {
  readonly #res: ServerResponse;
  readonly #socket: Socket;
  readonly #faults: DeliveryFaults;
  #written = 0;
  #lastByte = LF;
  #done = false;
  #pending: Buffer | null = null;

  private constructor(res: ServerResponse, faults: DeliveryFaults) {
    this.#res = res;
    this.#socket = res.socket as Socket;
    this.#faults = faults;
  }

  /** Sends the status line and headers (raw for `cut`) and returns the sink. */
  static open(
    res: ServerResponse,
    status: number,
    headers: OutgoingHttpHeaders,
    faults: DeliveryFaults,
  ): BodySink {
    const sink = new BodySink(res, faults);
    if (faults.cut) {
      sink.#writeRawHead(status, headers);
    } else {
      res.writeHead(status, headers);
      if (faults.stall && (faults.stall.afterBytes ?? 0) === 0) {
        res.flushHeaders();
        sink.#done = true;
      }
    }
    return sink;
  }

  /**
   * Sends a complete body (e.g. a JSON document) through the faults: with `Content-Length` when no
   * byte-level fault is active, chunked otherwise. `HEAD` gets the headers only.
   */
  static async sendWhole(
    res: ServerResponse,
    status: number,
    headers: OutgoingHttpHeaders,
    body: string,
    faults: DeliveryFaults,
    head: boolean,
  ): Promise<void> {
    if (head || !hasDeliveryFaults(faults)) {
      res.writeHead(status, { ...headers, 'Content-Length': Buffer.byteLength(body) });
      res.end(head ? undefined : body);
      return;
    }
    const sink = BodySink.open(res, status, headers, faults);
    await sink.write(body);
    await sink.end();
  }

  /**
   * Writes text pieces (e.g. lines), each followed by `suffix`, encoded straight into chunks of about
   * `chunkBytes` bytes: one `write` per chunk keeps a large export fast (no joined strings, no second
   * encoding pass), and the awaited writes give backpressure.
   *
   * @returns false when the body was ended early (client gone or a fault)
   */
  async writeAll(pieces: Iterable<string>, suffix = '', chunkBytes = 128 * 1024): Promise<boolean> {
    const tail = Buffer.from(suffix, 'utf8');
    let chunk = Buffer.allocUnsafe(chunkBytes);
    let used = 0;
    for (const piece of pieces) {
      // A UTF-16 code unit takes at most 3 UTF-8 bytes: flush first when the piece might not fit.
      const worst = piece.length * 3 + tail.length;
      if (used + worst > chunkBytes && used > 0) {
        if (!(await this.write(chunk.subarray(0, used)))) return false;
        chunk = Buffer.allocUnsafe(chunkBytes);
        used = 0;
      }
      if (worst > chunkBytes) {
        // A giant piece (the giant fault): its own buffer.
        if (!(await this.write(Buffer.from(piece + suffix, 'utf8')))) return false;
        continue;
      }
      used += chunk.write(piece, used, 'utf8');
      if (tail.length > 0) used += tail.copy(chunk, used);
    }
    return used === 0 ? !this.#done : this.write(chunk.subarray(0, used));
  }

  /** Bytes of body written so far. */
  get written(): number {
    return this.#written;
  }

  /** Writes a chunk; resolves `false` when the producer should stop (client gone or a fault ended the body). */
  async write(chunk: Buffer | string): Promise<boolean> {
    if (this.#done || this.#res.destroyed || this.#socket.destroyed) return false;
    const buf = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    if (this.#faults.cut) return this.#writeCut(buf, this.#faults.cut.afterBytes);
    const limit = this.#byteLimit();
    if (limit !== undefined && this.#written + buf.length >= limit) {
      const part = buf.subarray(0, Math.max(0, limit - this.#written));
      this.#done = true;
      await this.#flush(part);
      this.#afterLimit();
      return false;
    }
    return this.#resWrite(buf);
  }

  /**
   * Finishes the body: ends the response normally; for `cut`, closes the socket mid-line; for `stall`,
   * waits until the connection closes.
   */
  async end(): Promise<void> {
    if (this.#faults.cut && !this.#done) {
      this.#done = true;
      const pending = this.#pending;
      this.#pending = null;
      if (pending && pending.length > 0) await this.#socketWrite(pending.subarray(0, midLastLine(pending)));
      this.#socket.end();
      return;
    }
    if (this.#faults.stall) {
      await this.#closed();
      return;
    }
    if (this.#done || this.#res.destroyed) return;
    this.#done = true;
    await new Promise<void>((resolve) => this.#res.end(resolve));
  }

  #byteLimit(): number | undefined {
    const f = this.#faults;
    const limits = [f.stall?.afterBytes, f.reset?.afterBytes, f.chunkedCut?.afterBytes].filter(
      (n): n is number => n !== undefined,
    );
    return limits.length === 0 ? undefined : Math.min(...limits);
  }

  #afterLimit(): void {
    const f = this.#faults;
    if (f.reset) {
      // A real RST (ECONNRESET on the client), not a FIN: what a crashed proxy produces.
      setImmediate(() => this.#socket.resetAndDestroy());
    } else if (f.chunkedCut) {
      setImmediate(() => this.#socket.destroy());
    }
    // stall: keep the connection open; end() waits for it to close.
  }

  #writeCut(buf: Buffer, afterBytes: number): Promise<boolean> {
    const all = this.#pending ? Buffer.concat([this.#pending, buf]) : buf;
    this.#pending = null;
    const at = this.#cutIndex(all, afterBytes);
    if (at >= 0) {
      this.#done = true;
      return this.#socketWrite(all.subarray(0, at)).then(() => {
        this.#socket.end();
        return false;
      });
    }
    // Hold the newest chunk back: if the body ends before the threshold, end() cuts its last line.
    const older = all.subarray(0, all.length - buf.length);
    this.#pending = buf;
    return older.length > 0 ? this.#socketWrite(older) : Promise.resolve(true);
  }

  /** Index in `buf` to cut at (mid-line, not at its end), or -1 when the cut lies beyond `buf`. */
  #cutIndex(buf: Buffer, afterBytes: number): number {
    let at = afterBytes - this.#written;
    if (at >= buf.length) return -1;
    at = Math.max(0, at);
    // Never cut right after a line break: the cut must leave half a line.
    while (at < buf.length && (at === 0 ? this.#lastByte : buf[at - 1]) === LF) at++;
    return at < buf.length ? at : -1;
  }

  #writeRawHead(status: number, headers: OutgoingHttpHeaders): void {
    const lines = [`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}`];
    for (const [name, value] of Object.entries(headers)) {
      if (value === undefined || /^(content-length|transfer-encoding|connection)$/i.test(name)) continue;
      for (const v of Array.isArray(value) ? value : [value]) lines.push(`${name}: ${String(v)}`);
    }
    lines.push('Connection: close', `Date: ${new Date().toUTCString()}`, '', '');
    // Mark the response as ours so Node never writes its own head on this socket.
    this.#res.statusCode = status;
    this.#socket.write(lines.join('\r\n'));
  }

  #resWrite(buf: Buffer): Promise<boolean> {
    if (buf.length === 0) return Promise.resolve(!this.#done);
    this.#written += buf.length;
    this.#lastByte = buf[buf.length - 1] ?? this.#lastByte;
    if (this.#res.write(buf)) return Promise.resolve(true);
    return this.#drain(this.#res);
  }

  /** Writes and waits until the bytes reached the socket (so a following reset does not swallow them). */
  #flush(buf: Buffer): Promise<void> {
    if (buf.length === 0) return Promise.resolve();
    this.#written += buf.length;
    this.#lastByte = buf[buf.length - 1] ?? this.#lastByte;
    return new Promise((resolve) => this.#res.write(buf, () => resolve()));
  }

  #socketWrite(buf: Buffer): Promise<boolean> {
    if (buf.length === 0) return Promise.resolve(true);
    this.#written += buf.length;
    this.#lastByte = buf[buf.length - 1] ?? this.#lastByte;
    if (this.#socket.write(buf)) return Promise.resolve(true);
    return this.#drain(this.#socket);
  }

  #drain(stream: ServerResponse | Socket): Promise<boolean> {
    return new Promise((resolve) => {
      const onDrain = () => finish(true);
      const onClose = () => finish(false);
      const finish = (ok: boolean) => {
        stream.off('drain', onDrain);
        this.#socket.off('close', onClose);
        resolve(ok);
      };
      stream.once('drain', onDrain);
      this.#socket.once('close', onClose);
    });
  }

  #closed(): Promise<void> {
    if (this.#socket.destroyed) return Promise.resolve();
    return new Promise((resolve) => this.#socket.once('close', () => resolve()));
  }
}

/** A cut position in the middle of the last line of `buf` (which usually ends with a line break). */
function midLastLine(buf: Buffer): number {
  const end = buf[buf.length - 1] === LF ? buf.length - 1 : buf.length;
  const start = buf.lastIndexOf(LF, end - 1) + 1;
  if (end - start <= 1) return Math.max(0, Math.min(buf.length - 1, end));
  return start + Math.floor((end - start) / 2);
}

import { BlockPacker, type NdjsonBlock } from './block-packer.js';
import { LineSplitter, type LineSink } from './split-lines.js';

/** Bounds of {@link ndjsonBlocks}, in bytes. */
export interface NdjsonOptions {
  /** Longest line kept whole; a longer one travels as an over-long line, never buffered whole. */
  maxRecordBytes: number;
  /** Raw text kept for a quarantined record. */
  rejectRawMaxBytes: number;
  /** Safe URL for error messages. */
  url: string;
  /**
   * Added to every line number (default 0): a source that reads several bodies (the list endpoint's pages)
   * numbers their lines apart, so records keep one arrival order across bodies.
   */
  lineOffset?: number | undefined;
  /**
   * The transport checks where the body ends (`bodyEndChecked` of upstream/http-answers.ts: a length
   * or chunked framing): a last line without a final `\n` is then the export's last line,
   * decoded like any other (a malformed one quarantined). Default false: the body may have been cut there,
   * so that line travels flagged `unterminated`.
   */
  endChecked?: boolean | undefined;
  /**
   * Size of a block (bytes, default 1 MiB): a block holds the lines (each with its `\n`) that fit in it; a
   * longer line travels in a block of its own.
   */
  blockBytes?: number | undefined;
}

/**
 * NDJSON body → {@link NdjsonBlock}s of raw lines (about 1 MiB each), in body order; nothing is parsed or
 * validated here (the normalize stage decodes blocks). A BOM is stripped; blank lines travel too (their
 * numbers count; the decoder skips them); a line over `maxRecordBytes` travels as an over-long line holding
 * only its first `rejectRawMaxBytes` bytes; a last line without a final `\n` travels alone in the last block,
 * flagged `unterminated`, unless `endChecked`. A line inside one chunk is copied from the chunk into its block, with no object
 * made for it (the main thread cuts every line of the export).
 */
export async function* ndjsonBlocks(
  body: AsyncIterable<Uint8Array>,
  options: NdjsonOptions,
): AsyncGenerator<NdjsonBlock> {
  const packer = new BlockPacker(options.blockBytes);
  const offset = options.lineOffset ?? 0;
  const splitter = new LineSplitter({
    maxLineBytes: options.maxRecordBytes,
    keepBytes: options.rejectRawMaxBytes,
  });
  const ready: NdjsonBlock[] = [];
  const sink: LineSink = {
    whole(chunk, start, end, lineNumber) {
      if (packer.wouldOverflow(end - start)) ready.push(packer.take());
      packer.addRange(chunk, start, end, lineNumber + offset);
      if (packer.full) ready.push(packer.take());
    },
    line(line) {
      if (line.overLimit) {
        packer.addOverLong({
          lineNumber: line.lineNumber + offset,
          bytes: line.bytes,
          text: line.text,
          limit: options.maxRecordBytes,
        });
      } else if (line.terminated || options.endChecked) {
        const raw = line.raw ?? Buffer.from(line.text);
        if (packer.wouldOverflow(raw.length)) ready.push(packer.take());
        packer.add(raw, line.lineNumber + offset);
      } else {
        // A final block of its own: when the body was cut there, the blocks before it still count.
        if (packer.count > 0) ready.push(packer.take());
        packer.addUnterminated(line.raw ?? Buffer.from(line.text), line.lineNumber + offset, options.url);
      }
      if (packer.full) ready.push(packer.take());
    },
  };
  for await (const chunk of body) {
    splitter.push(chunk, sink);
    packer.flush(); // the chunk may be reused once we await again
    yield* ready.splice(0);
  }
  splitter.end(sink);
  if (packer.count > 0) ready.push(packer.take());
  yield* ready.splice(0);
}

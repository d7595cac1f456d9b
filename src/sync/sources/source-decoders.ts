import { extraLimits } from '../../config/config.js';
import { startDecoders, type BlockDecoders } from '../../normalize/decoders.js';
import { KnownLines } from '../../normalize/known-lines.js';
import type { ReadContext } from '../export-source.js';

/**
 * The decode workers of one read, the same for every source: `REPORTS_DECODE_WORKERS` threads that skip
 * the lines the warehouse already holds (`ctx.knownLines`; none for a source without line hashes), keep
 * `REPORTS_REJECT_RAW_MAX_BYTES` of a quarantined record's raw text, and bound its unknown fields
 * (`REPORTS_EXTRA_MAX_*`). The caller closes them when its read ends.
 */
export async function startSourceDecoders(ctx: ReadContext, source: string): Promise<BlockDecoders> {
  const { config } = ctx;
  const known = ctx.knownLines ?? (await KnownLines.empty(source, extraLimits(config)));
  return startDecoders(config.decodeWorkers, known, config.rejectRawMaxBytes, extraLimits(config));
}

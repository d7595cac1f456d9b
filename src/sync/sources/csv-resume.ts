import { requestOptions } from '../../upstream/request-options.js';
import { openStream } from '../../upstream/open-stream.js';
import { withRetry } from '../../upstream/with-retry.js';
import type { ExportValidator, ReadContext } from '../export-source.js';
import { ACCEPT, csvPageUrl } from './csv-pages.js';
import { pageValidator } from './export-validators.js';

// What resuming an interrupted CSV export needs: page 1's validator now, and the page size in force.

/** `probe` of {@link PagedExport}: the validator of page 1, its body left unread. */
export async function probeFirstPage(ctx: ReadContext): Promise<ExportValidator> {
  const url = csvPageUrl(ctx.config, 1);
  return withRetry(
    'CSV page 1 (resume check)',
    ctx.config,
    ctx.logger,
    async () => {
      const res = await openStream(
        url,
        requestOptions(ctx.config, ctx, url, { accept: ACCEPT, deadline: 'page' }),
      );
      // Abort the body unread; undici then emits an abort error nobody else listens to.
      res.body.once('error', () => undefined);
      res.body.destroy();
      return pageValidator(res.headers);
    },
    ctx.signal,
  );
}

/**
 * The page size in force when resuming: the rows per committed page when the server served fewer than
 * asked (its cap, adopted by the interrupted run), else the size asked.
 */
export function resumedPageSize(
  asked: number,
  resume: { page: number; rowsRead?: number | undefined },
): number {
  if (resume.rowsRead === undefined || resume.page < 1) return asked;
  const served = Math.round(resume.rowsRead / resume.page);
  return served > 0 && served < asked ? served : asked;
}

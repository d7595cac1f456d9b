import { SyncError } from '../../util/errors.js';
import { safeUrl } from '../../util/safe-url.js';
import type { ExportInfo, ExportValidator, ReadContext } from '../export-source.js';
import { compareValidators, describeValidator, hasValidator } from './export-validators.js';

/** What one fetched page told the pager. */
export interface PageAnswer {
  /** The URL that answered, without secrets. */
  url: string;
  /** Data rows (quarantined ones included). */
  rows: number;
  /** Digest of the page's keys (to notice a server that ignores the page parameter). */
  keysDigest: string | undefined;
  etag?: string | undefined;
  lastModified?: string | undefined;
  /** The answer's `Age` (s), when a cache served it. */
  cacheAge?: number | undefined;
  /** The `Link: rel="next"` target. */
  next: URL | undefined;
  /** An error answer past the last page, or a 204 (no content), read as an empty page. */
  pastEnd?: true | undefined;
}

/** What the validator of a page means: nothing to do, a validator to record, or page 1 to be asked again. */
export type ValidatorStep = { kind: 'ok' } | { kind: 'export'; info: ExportInfo } | { kind: 'probe' };

/**
 * Whether the pages of a CSV export are one version of it (docs/guarantees.md, "Consistent"): every page
 * must carry the validator page 1 had. A page with another one asks page 1 again (`probe`): changed there
 * too, the export changed while it was read (`EXPORT_CHANGED`); unchanged, the server validates each page
 * on its own, and the run reads on inferring no deletes ({@link consistency}). Page 1's validator is
 * recorded as the export's only once a later page proved it; until then it may be withdrawn.
 */
export class PageValidators {
  /** Page 1's validator (a resumed run's, before any page). */
  first: ExportValidator | undefined;
  /** Why the pages cannot be proven one version, once known (the run then infers no deletes). */
  consistency: string | undefined;
  #perPage = false;
  /** A page after page 1 carried page 1's validator: it is the export's. */
  #proven: boolean;
  /** Page 1's `Age` (s), when a cache served it: kept with the export's info, validator or none. */
  #cacheAge: number | undefined;
  /** Page 1's validator was withdrawn from the run's export info (not proven the export's). */
  #withdrawn = false;

  /**
   * @param page1 page 1's URL (named in the export info when a validator is withdrawn)
   * @param unstable an earlier attempt found the export changed (ReadContext.validatorUnstable)
   * @param resume where an interrupted run stopped, with the validator it kept
   */
  constructor(
    private readonly page1: URL,
    private readonly unstable: boolean,
    resume: ReadContext['resumeFrom'],
  ) {
    if (resume) this.first = { etag: resume.etag, lastModified: resume.lastModified };
    // The interrupted run compared page 2 with page 1 before it committed page 2: a validator it kept
    // that far was proven the export's. Kept after page 1 only, it is still page 1's own until a page matches.
    this.#proven = resume !== undefined && resume.page >= 2;
  }

  /** Checks the validator of page `page` against page 1's: {@link ValidatorStep}. */
  check(answer: PageAnswer, page: number): ValidatorStep {
    const seen = validatorOf(answer);
    // An error answer stands for an empty page: it has no validator to compare.
    if (answer.pastEnd) return this.#unproven();
    if (this.first === undefined) {
      this.first = seen;
      this.#cacheAge = answer.cacheAge;
      return { kind: 'export', info: { url: answer.url, ...seen, cacheAge: answer.cacheAge } };
    }
    const same = compareValidators(this.first, seen);
    if (same === 'unknown') {
      this.consistency ??=
        `page ${page} carries no validator of the kind page 1 had (${describeValidator(this.first)}, now ` +
        `${describeValidator(seen)}): the pages cannot be proven to be of one version`;
      return this.#unproven();
    }
    if (same === 'changed') {
      // Changed, or a server that validates each page apart: then page 1 still has the validator it had.
      return this.#perPage ? this.afterProbe(answer, this.first, page) : { kind: 'probe' };
    }
    this.#proven = true; // a page after page 1 (page 1 itself is never compared)
    return { kind: 'ok' };
  }

  /**
   * A page after page 1 that cannot be compared with it (an error answer past the end, a page without a
   * validator of page 1's kind) while none has matched it yet: page 1's validator may be its own, so it is
   * not recorded as the export's. Recorded, the next run would send it, and a 304 to an unchanged page 1
   * would hide reports published onto later pages.
   */
  #unproven(): ValidatorStep {
    if (this.#proven || this.#perPage || this.#withdrawn) return { kind: 'ok' };
    if (this.first === undefined || !hasValidator(this.first)) return { kind: 'ok' };
    this.#withdrawn = true;
    return { kind: 'export', info: { url: safeUrl(this.page1), cacheAge: this.#cacheAge } };
  }

  /**
   * After a `probe`: page 1's validator now. Unchanged: the server validates each page (no export version is
   * recorded, so no later run sends it: a 304 to page 1 would hide rows added on later pages).
   *
   * @throws SyncError `EXPORT_CHANGED` (the runner reads the export again from page 1) when page 1 changed,
   *   unless an earlier attempt already found it changed (`unstable`): then the run reads on as for a server
   *   validating each page (no validator recorded, no deletes inferred)
   */
  afterProbe(answer: PageAnswer, firstNow: ExportValidator, page: number): ValidatorStep {
    const first = this.first ?? {};
    const seen = validatorOf(answer);
    const changed = !this.#perPage && compareValidators(first, firstNow) !== 'same';
    if (changed && this.unstable) {
      this.consistency ??=
        `page 1's validator changed again while the export was read (${describeValidator(first)}, then ` +
        `${describeValidator(firstNow)}), as on an earlier attempt: it names no version that lasts a read, so ` +
        'the pages cannot be proven to be of one version';
      this.#perPage = true;
      return { kind: 'export', info: { url: safeUrl(this.page1), cacheAge: this.#cacheAge } };
    }
    if (changed) {
      throw new SyncError(
        'EXPORT_CHANGED',
        `The CSV export changed while it was read: page ${page} (${answer.url}) has validator ` +
          `${describeValidator(seen)}, page 1 had ${describeValidator(first)}: the export is read again from page 1 ` +
          '(if it keeps changing, sync when the upstream is not regenerating it)',
        { context: { url: answer.url, page, first, now: seen }, retry: 'export' },
      );
    }
    this.consistency ??=
      `page ${page} has a validator of its own (${describeValidator(seen)}) while page 1's is unchanged: ` +
      'the server validates each page, not the export, so the pages cannot be proven to be of one version';
    if (this.#perPage) return { kind: 'ok' };
    this.#perPage = true;
    return { kind: 'export', info: { url: safeUrl(this.page1), cacheAge: this.#cacheAge } };
  }

  /** A page (not an error answer) without any validator: the pages cannot be proven one version. */
  noteUnvalidated(answer: PageAnswer, page: number): void {
    if (this.consistency !== undefined || answer.pastEnd || hasValidator(validatorOf(answer))) return;
    this.consistency =
      `page ${page} carries neither ETag nor Last-Modified: a paged export without a validator cannot ` +
      'prove its pages are of one version (a row unpublished mid-read shifts later rows across pages)';
  }
}

/** The export validator a page answered with. */
export function validatorOf(answer: PageAnswer): ExportValidator {
  return { etag: answer.etag, lastModified: answer.lastModified };
}

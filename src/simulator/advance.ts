import { unitHash } from './seeded-random.js';

/** One simulated day in milliseconds. */
export const DAY_MS = 86_400_000;

/**
 * Daily probabilities of the simulated upstream (docs/architecture.md: status moves `SUBMITTED → IN_PROGRESS →
 * RESOLVED`/`REJECTED`, unpublished reports). Each published report draws once per day per rule.
 * `newShareOfFile`: new reports per day in a file dataset, as a share of its valid reports (a generated
 * dataset instead keeps its own creation rate, see generate.ts).
 */
export const DAILY_RATES = {
  submittedToInProgress: 0.3,
  inProgressToResolved: 0.2,
  inProgressToRejected: 0.05,
  unpublish: 0.003,
  newShareOfFile: 0.02,
} as const;

// Salts keep the independent draws of one (day, slot) independent.
const SALT_UNPUBLISH = 1;
const SALT_MOVE = 2;
const SALT_TIME = 3;

/** A published report as the day planner sees it: its slot (position in the dataset) and current status. */
export interface DayCandidate {
  slot: number;
  status: string;
}

/** What happens on one simulated day: status moves (with the new `updatedAt`) and unpublished slots. */
export interface DayPlan {
  moves: Array<{ slot: number; status: string; updatedAtMs: number }>;
  unpublish: number[];
}

/**
 * Decides one simulated day, deterministically from `(seed, day, slot)`: the same seed always gives the same
 * history, whatever the order or the number of `advanceDays` calls (`advanceDays(2)` = `advanceDays(1)` twice).
 *
 * Rules (in this order, per published report):
 * 1. unpublished with probability {@link DAILY_RATES}.unpublish (then it does not move);
 * 2. `SUBMITTED` → `IN_PROGRESS` (0.30); `IN_PROGRESS` → `RESOLVED` (0.20) or `REJECTED` (0.05);
 *    `RESOLVED`, `REJECTED` and unknown statuses stay;
 * 3. so that even a tiny dataset visibly changes every day: when no report was unpublished, the one with
 *    the lowest unpublish draw is; when no report moved but one could, the open one with the lowest move
 *    draw moves.
 * A move's `updatedAt` is a whole second inside the day: `dayStartMs + 1 s … dayStartMs + 1 day`.
 */
export function planDay(
  seed: number,
  day: number,
  dayStartMs: number,
  candidates: Iterable<DayCandidate>,
): DayPlan {
  const moves: DayPlan['moves'] = [];
  const unpublish: number[] = [];
  let lowestUnpublish: { slot: number; u: number } | null = null;
  let lowestMove: { slot: number; u: number; status: string } | null = null;
  for (const { slot, status } of candidates) {
    const u = unitHash(seed, day, slot, SALT_UNPUBLISH);
    if (u < DAILY_RATES.unpublish) {
      unpublish.push(slot);
      continue;
    }
    if (lowestUnpublish === null || u < lowestUnpublish.u) lowestUnpublish = { slot, u };
    const m = unitHash(seed, day, slot, SALT_MOVE);
    const next = nextStatus(status, m);
    if (next !== null) {
      moves.push({ slot, status: next, updatedAtMs: eventTime(seed, day, slot, dayStartMs) });
    } else if (isOpen(status) && (lowestMove === null || m < lowestMove.u)) {
      lowestMove = { slot, u: m, status };
    }
  }
  if (unpublish.length === 0 && lowestUnpublish !== null) {
    unpublish.push(lowestUnpublish.slot);
    const i = moves.findIndex((mv) => mv.slot === lowestUnpublish.slot);
    if (i >= 0) moves.splice(i, 1);
    if (lowestMove?.slot === lowestUnpublish.slot) lowestMove = null;
  }
  if (moves.length === 0 && lowestMove !== null) {
    const forced = lowestMove.status === 'SUBMITTED' ? 'IN_PROGRESS' : 'RESOLVED';
    moves.push({
      slot: lowestMove.slot,
      status: forced,
      updatedAtMs: eventTime(seed, day, lowestMove.slot, dayStartMs),
    });
  }
  return { moves, unpublish };
}

/** The status a report moves to for draw `u` in [0, 1), or `null` when it stays (rule 2 of {@link planDay}). */
export function nextStatus(status: string, u: number): string | null {
  if (status === 'SUBMITTED') return u < DAILY_RATES.submittedToInProgress ? 'IN_PROGRESS' : null;
  if (status === 'IN_PROGRESS') {
    if (u < DAILY_RATES.inProgressToResolved) return 'RESOLVED';
    if (u < DAILY_RATES.inProgressToResolved + DAILY_RATES.inProgressToRejected) return 'REJECTED';
  }
  return null;
}

function isOpen(status: string): boolean {
  return status === 'SUBMITTED' || status === 'IN_PROGRESS';
}

/** A whole-second instant in `(dayStartMs, dayStartMs + 1 day]`, derived from `(seed, day, slot)`. */
export function eventTime(seed: number, day: number, slot: number, dayStartMs: number): number {
  const second = 1 + Math.floor(unitHash(seed, day, slot, SALT_TIME) * 86_399);
  return Math.floor(dayStartMs / 1000) * 1000 + second * 1000;
}

/**
 * Exponential backoff, written once: the wait before the next attempt starts at `initialMs`, doubles with
 * every consecutive failure and stops growing at `maxMs`. A `jitter` range spreads the wait at random
 * between two multiples of it, so many clients that failed together do not retry together.
 *
 * Pure arithmetic: callers own their timers and their failure counts.
 */
interface BackoffPolicy {
  readonly initialMs: number;
  readonly maxMs: number;
  /** The wait is drawn uniformly from [low × delay, high × delay); none by default. */
  readonly jitter?: JitterRange;
}

type JitterRange = readonly [low: number, high: number];

/** Past this many doublings every sane cap has long been reached; stopping here keeps the number finite. */
const MAX_DOUBLINGS = 30;

/** The wait after `attempt` consecutive failures (1 for the first), capped, then jittered. */
export function backoffDelay(attempt: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const doublings = Math.min(Math.max(attempt, 1) - 1, MAX_DOUBLINGS);
  const capped = Math.min(policy.maxMs, policy.initialMs * 2 ** doublings);
  return policy.jitter ? jitter(capped, policy.jitter, random) : capped;
}

/** `ms` scaled by a factor drawn uniformly from [low, high). */
export function jitter(ms: number, [low, high]: JitterRange, random: () => number = Math.random): number {
  return ms * (low + (high - low) * random());
}

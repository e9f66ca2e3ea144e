/**
 * Durations on command lines, one grammar for every program: a decimal number and a unit, `ms`, `s`, `m`,
 * `h`, `d` or `w` (`250ms`, `30s`, `1.5h`, `90d`, `2w`); a bare number is seconds, as the Kubernetes tools
 * take it. Units are lower case, white space around the value is ignored, and the value is rounded to whole
 * milliseconds.
 *
 * What differs between flags is not the grammar but the rules a flag adds: whether zero is allowed, an upper
 * bound, and whether a bare number is too ambiguous to accept (a token lifetime of `90` could mean anything).
 */
export const DURATION_UNITS_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 } as const;

type DurationUnit = keyof typeof DURATION_UNITS_MS;

/** The longest delay a Node.js timer (setTimeout, AbortSignal.timeout) honours; longer ones fire at once. */
export const TIMER_MAX_MS = 2 ** 31 - 1;

interface DurationRules {
  /** Refuse zero (a timeout or a lifetime of nothing). */
  readonly positive?: boolean;
  readonly maxMs?: number;
  /** Refuse a bare number: the unit must be written. */
  readonly requireUnit?: boolean;
}

const GRAMMAR = /^(\d+(?:\.\d+)?)(ms|s|m|h|d|w)?$/;
const EXAMPLES = 'such as 250ms, 30s, 5m, 1h or 90d';

/** Milliseconds, or a RangeError whose message quotes the text and says what a duration looks like. */
export function parseDuration(text: string, rules: DurationRules = {}): number {
  const m = GRAMMAR.exec(text.trim());
  if (!m) throw new RangeError(`${JSON.stringify(text)} is not a duration ${EXAMPLES}`);
  if (m[2] === undefined && rules.requireUnit) throw new RangeError(`${JSON.stringify(text)} is not a duration ${EXAMPLES}: the unit is required`);
  const ms = Math.round(Number(m[1]) * DURATION_UNITS_MS[(m[2] ?? 's') as DurationUnit]);
  if (rules.positive && ms <= 0) throw new RangeError(`${JSON.stringify(text)} is not a positive duration`);
  if (rules.maxMs !== undefined && ms > rules.maxMs) throw new RangeError(`${JSON.stringify(text)} is longer than ${formatDuration(rules.maxMs)}`);
  return ms;
}

const LARGEST_FIRST = (Object.entries(DURATION_UNITS_MS) as [DurationUnit, number][]).reverse();

/** The shortest way to write `ms` in the grammar: the largest unit that divides it exactly. */
export function formatDuration(ms: number): string {
  const whole = Math.round(ms);
  if (whole === 0) return '0s';
  const [unit, size] = LARGEST_FIRST.find(([, size]) => whole % size === 0) ?? ['ms', 1];
  return `${whole / size}${unit}`;
}

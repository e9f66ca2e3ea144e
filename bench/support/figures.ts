// Reading and summing up what a bench measured.

/** The median (the mean of the two middle values for an even count); NaN for none. */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

/** The value of metric `name` (its first series) in a Prometheus text exposition; undefined if it is not there. */
export function metricValue(text: string, name: string): number | undefined {
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)$`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
}

/** One measured load run: requests/s, latency percentiles (ms), answers by status, errors, server CPU µs per answer. */
export interface Measured {
  rps: number;
  p50: number;
  p99: number;
  statuses: Map<number, number>;
  errors: number;
  cpu: number;
}

/** A case's run in one round, and the baseline runs just before and just after it. */
export interface Bracketed {
  readonly run: Measured;
  readonly before: Measured;
  readonly after: Measured;
}

/**
 * One round: the baseline, then each case followed by the baseline again (B c1 B c2 … B), so every case has a
 * baseline run on either side of it. On a shared machine the speed drifts within seconds: a baseline measured at
 * the start of a round, several runs before the case, lets that drift into the ratio; the mean of the two runs
 * around the case cancels a steady drift and halves a short disturbance. `measure` runs one case (or the baseline).
 */
export async function bracketedRound<N extends string>(names: readonly N[], measure: (name: N | 'baseline') => Promise<Measured>): Promise<Map<N, Bracketed>> {
  const out = new Map<N, Bracketed>();
  let before = await measure('baseline');
  for (const name of names) {
    const run = await measure(name);
    const after = await measure('baseline');
    out.set(name, { run, before, after });
    before = after;
  }
  return out;
}

/** The median over rounds of `f` of the case against the mean of `f` of the baseline runs around it; NaN for none. */
export function bracketedRatio(rounds: readonly Bracketed[], f: (m: Measured) => number): number {
  return median(rounds.map((b) => f(b.run) / ((f(b.before) + f(b.after)) / 2)));
}

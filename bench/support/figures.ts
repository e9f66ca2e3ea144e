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

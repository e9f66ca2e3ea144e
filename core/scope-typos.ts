/**
 * What makes a new scope look like a typo (docs/cli-safety.md): the CLI warns, never refuses, when an add creates a
 * scope whose value is a small edit away from an existing scope of the same kind, when a topic does not fit the WIS2
 * topic hierarchy, or when a path is a WIS2 topic written with slashes. A typo'd scope is a new scope that protects
 * nothing anyone asks for, while the scope meant stays as it was.
 */
import type { Scope } from './scope.js';

/**
 * The Damerau-Levenshtein distance of a and b (optimal string alignment: insertions, deletions, substitutions and
 * transpositions of adjacent characters, each 1), or `max + 1` as soon as it is known to exceed `max`.
 */
export function editDistance(a: string, b: string, max = Number.POSITIVE_INFINITY): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  let before = new Array<number>(b.length + 1).fill(0);
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = new Array<number>(b.length + 1).fill(0);
    current[0] = i;
    let rowMin = current[0];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, before[j - 2]! + 1);
      current[j] = d;
      if (d < rowMin) rowMin = d;
    }
    if (rowMin > max) return max + 1;
    before = previous;
    previous = current;
  }
  const d = previous[b.length]!;
  return d > max ? max + 1 : d;
}

/**
 * How many edits make a value a likely typo of another: 2 from 12 characters on, 1 from 6, none below (two short test
 * names such as `a.b` and `a.c` are not typos of each other).
 */
export function typoDistance(value: string): number {
  return value.length >= 12 ? 2 : value.length >= 6 ? 1 : 0;
}

/** One of the two is the other followed by a level separator: a parent and its child, never a typo. */
function nested(a: string, b: string): boolean {
  const [short, long] = a.length <= b.length ? [a, b] : [b, a];
  return long.startsWith(short) && '.:/-'.includes(long[short.length] ?? '');
}

/** A scope of the same kind as `scope`, close enough to be the one meant, with its distance. */
export interface NearScope {
  readonly scope: Scope;
  readonly distance: number;
}

/**
 * The existing scopes of the same kind that `scope` is a small edit from (typoDistance, case ignored), nearest first;
 * not the scope itself, and not its parents or children.
 */
export function nearScopes(scope: Scope, existing: Iterable<Scope>): NearScope[] {
  const value = scope.value.toLowerCase();
  const max = typoDistance(value);
  const seen = new Set<string>();
  const out: NearScope[] = [];
  if (max === 0) return out;
  for (const other of existing) {
    if (other.kind !== scope.kind) continue;
    const v = other.value.toLowerCase();
    if (v === value || seen.has(v) || nested(v, value)) continue;
    seen.add(v);
    const distance = editDistance(value, v, max);
    if (distance <= max) out.push({ scope: other, distance });
  }
  return out.sort((a, b) => a.distance - b.distance || (a.scope.value < b.scope.value ? -1 : a.scope.value > b.scope.value ? 1 : 0));
}

/** The shape of a WIS2 topic, for messages. */
export const WIS2_TOPIC_SHAPE = 'origin|cache.a.wis2.<centre-id>.data|metadata.core|recommended...';

const CENTRE_ID = /^[a-z0-9]+(-[a-z0-9]+)*$/;

/**
 * Why a topic does not fit the WIS2 topic hierarchy (WMO-No. 1060, Manual on WIS, Vol. II: channel `origin` or `cache`,
 * version `a`, system `wis2`, the centre id, `data` or `metadata`, then for data its policy `core` or `recommended`), or
 * undefined when every level it has fits. A shorter topic (`origin.a.wis2.mw-met`) fits as far as it goes.
 */
export function wis2TopicMisfit(topic: string): string | undefined {
  const levels = topic.split('.');
  const [channel, version, system, centre, type, policy] = levels;
  const level = (n: number, got: string, want: string) => `level ${n} is "${got}", not ${want}`;
  if (channel !== 'origin' && channel !== 'cache') {
    const at = levels.findIndex((l) => l === 'origin' || l === 'cache');
    return at > 0 ? `it starts with "${levels.slice(0, at).join('.')}" before "${levels[at]}": a WIS2 topic starts with origin or cache` : level(1, channel ?? '', 'origin or cache');
  }
  if (version !== undefined && version !== 'a') return level(2, version, '"a"');
  if (system !== undefined && system !== 'wis2') return level(3, system, '"wis2"');
  if (centre !== undefined && !CENTRE_ID.test(centre)) return level(4, centre, 'a centre id (lower-case letters, digits and "-")');
  if (type !== undefined && type !== 'data' && type !== 'metadata') return level(5, type, 'data or metadata');
  if (type === 'data' && policy !== undefined && policy !== 'core' && policy !== 'recommended') return level(6, policy, 'core or recommended');
  return undefined;
}

/**
 * A path scope that is a WIS2 topic written with slashes (`origin/a/wis2/mw-met/data/core`): the topic it probably
 * means, dotted, or undefined. A path scope names a path of the host, which no WIS2 topic is.
 */
export function topicLikePath(path: string): string | undefined {
  const segments = path.split('/');
  if (segments.length < 2) return undefined;
  const first = segments[0]!.toLowerCase();
  const looks = first === 'origin' || first === 'cache' || (segments.some((s) => s.toLowerCase() === 'wis2') && segments.some((s) => s === 'origin' || s === 'cache'));
  return looks && segments.every((s) => /^[A-Za-z0-9_-]+$/.test(s)) ? segments.join('.') : undefined;
}

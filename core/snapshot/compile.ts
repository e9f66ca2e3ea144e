/**
 * The snapshot compiler: every closed scope of a namespace with its token hashes and expiry, nothing else,
 * from the validated ProtectedScopes. Scopes are sorted, so the same input always gives the same lines
 * (lines.ts) and the same generation.
 */
import { DEFAULT_PREFIXES, publicRefusal, type PathPrefixes } from '../path-scope.js';
import { closedByFlag, networksOf, publicByFlag, scopeOf, subjectsOf, tokensOf, type ProtectedScope } from '../protected-scope.js';
import { readNetworks, type Network } from '../network.js';
import { mergeSubjects } from '../subject.js';
import { compareScopes, compareStrings, scopeKey } from '../scope.js';
import type { TokenHash } from '../token.js';
import { GenerationHash, scopeLine, type Snapshot, type SnapshotScope, type SnapshotToken } from './lines.js';

/** Groups objects by the scope they protect; more than one object for a scope is a merge. */
export function groupByScope(objects: readonly ProtectedScope[]): Map<string, ProtectedScope[]> {
  const groups = new Map<string, ProtectedScope[]>();
  for (const o of objects) {
    const key = scopeKey(scopeOf(o.spec));
    const group = groups.get(key);
    if (group) group.push(o);
    else groups.set(key, [o]);
  }
  return groups;
}

/**
 * Compiles validated ProtectedScopes into a snapshot. Objects for the same scope merge (union of tokens, of
 * subjects and of networks); a hash listed twice keeps the later expiry, or none if either has none; any object
 * saying `closed: true` closes the scope. Scopes without tokens, subjects or networks and not closed by flag are
 * open and left out.
 */
export function compileSnapshot(objects: readonly ProtectedScope[], prefixes: PathPrefixes = DEFAULT_PREFIXES): Snapshot {
  const steps = compileSnapshotSteps(objects, Infinity, prefixes);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/**
 * compileSnapshot a step at a time, for a caller that yields to its event loop between steps (10,000
 * scopes of 10 tokens take ~150 ms in all): the generator pauses after every `every` steps (a scope's
 * objects merged, or a line written and hashed) and returns the snapshot. Only grouping the objects by
 * scope and sorting the scopes are done in one go (a few milliseconds for 10,000).
 */
export function* compileSnapshotSteps(objects: readonly ProtectedScope[], every = 32, prefixes: PathPrefixes = DEFAULT_PREFIXES): Generator<void, Snapshot, void> {
  let work = 0;
  const scopes: SnapshotScope[] = [];
  for (const group of groupByScope(objects).values()) {
    if (++work % every === 0) yield;
    const scope = mergeGroup(group, prefixes);
    if (scope) scopes.push(scope);
  }
  scopes.sort(compareScopes);
  const lines: string[] = [];
  const generation = new GenerationHash();
  let tokenCount = 0;
  for (const s of scopes) {
    if (++work % every === 0) yield;
    const line = scopeLine(s);
    lines.push(line);
    generation.add(line);
    tokenCount += s.tokens.length;
  }
  return { generation: generation.digest(), scopeCount: scopes.length, tokenCount, lines };
}

/** The union of the group's networks, each once, in canonical order; an unreadable one closes the scope (readNetworks). */
function mergeNetworks(group: readonly ProtectedScope[]): { readonly networks: readonly Network[]; readonly unreadable: boolean } {
  return readNetworks(group.flatMap(networksOf));
}

/** The snapshot scope of one scope's objects, or undefined when they leave it open. */
function mergeGroup(group: readonly ProtectedScope[], prefixes: PathPrefixes): SnapshotScope | undefined {
  const expiry = new Map<TokenHash, number>();
  const { networks, unreadable } = mergeNetworks(group);
  const closed = group.some(closedByFlag) || unreadable;
  for (const o of group) {
    for (const t of tokensOf(o)) {
      const at = t.expiresAt === undefined ? Infinity : Date.parse(t.expiresAt);
      expiry.set(t.hash, Math.max(expiry.get(t.hash) ?? -Infinity, at));
    }
  }
  const subjects = mergeSubjects(group.map(subjectsOf));
  if (expiry.size === 0 && subjects.length === 0 && networks.length === 0 && !closed) {
    // Public only while no object of the scope closes it: two objects that disagree fail closed. A path in a
    // refused form or at or above a prefix is never public (path-scope.ts): it is left out as any open scope.
    const scope = scopeOf(group[0]!.spec);
    return group.some(publicByFlag) && publicRefusal(scope.value, prefixes) === undefined ? { ...scope, tokens: [], public: true } : undefined;
  }
  const tokens = [...expiry]
    .sort(([a], [b]) => compareStrings(a, b))
    .map(([hash, at]): SnapshotToken => (at === Infinity ? { hash } : { hash, expiresAt: new Date(at).toISOString() }));
  return {
    ...scopeOf(group[0]!.spec), tokens, ...(closed ? { closed: true as const } : {}), ...(subjects.length > 0 ? { subjects } : {}),
    ...(networks.length > 0 ? { networks } : {}),
  };
}

// Broken edits of a manifest file, generated rather than listed (docs/access-rules.md: a manifest that cannot be
// read exactly is invalid, and only deleting a file removes a scope), and the judge of what a mutation may
// change. Shared by core's test (the pure pipeline) and svc-auth's (the real --scopes-dir source).
import {
  buildIndex,
  compileSnapshot,
  decide,
  DEFAULT_CONFIG,
  hashTokenHex,
  scopeKey,
  scopeOf,
  tokensOf,
  type AccessIndex,
  type ProtectedScope,
  type Scope,
} from '../../core/index.js';

export interface Mutation {
  readonly what: string;
  readonly text: string;
}

/** Every truncation (at each byte), every single-line deletion, and every key renamed three ways. */
export function* mutations(text: string): Generator<Mutation> {
  for (let i = 0; i < text.length; i++) yield { what: `truncated at byte ${i}`, text: text.slice(0, i) };
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] === '') continue;
    yield { what: `line ${i + 1} deleted`, text: [...lines.slice(0, i), ...lines.slice(i + 1)].join('\n') };
  }
  // YAML `key:` (also after a list dash) and JSON `"key":`.
  const key = /^(\s*(?:-\s+)?"?)([A-Za-z][A-Za-z0-9]*)("?\s*:)/;
  for (let i = 0; i < lines.length; i++) {
    const m = key.exec(lines[i]!);
    if (!m) continue;
    const k = m[2]!;
    const renamed = [`${k}z`, k.slice(0, -1), k[0] === k[0]!.toUpperCase() ? k[0]!.toLowerCase() + k.slice(1) : k[0]!.toUpperCase() + k.slice(1)];
    for (const r of renamed) {
      if (r.length === 0) continue;
      const line = lines[i]!.replace(key, `$1${r}$3`);
      yield { what: `key ${k} on line ${i + 1} renamed to ${r}`, text: [...lines.slice(0, i), line, ...lines.slice(i + 1)].join('\n') };
    }
  }
}

export interface Probe {
  readonly method: string;
  readonly target: string;
  /** The plaintext token, or undefined for none; never printed (probes are reported by index). */
  readonly token: string | undefined;
}

/** Requests for the scope's own data: each with no token, each of `tokens`, and an unknown one. */
export function probes(scope: Scope, tokens: readonly string[], unknown: string): Probe[] {
  const targets: [string, string][] =
    scope.kind === 'topic'
      ? [['GET', `/data/2026-11-24/wis/${scope.value.split('.').join('/')}/f.bufr4`], ['GET', `/oapi/collections/${scope.value}/items`]]
      : scope.kind === 'dataset'
        ? [['GET', `/data/2026-11-24/wis/${scope.value}/f.bufr4`], ['GET', `/oapi/collections/${scope.value}/items`]]
        : scope.value === 'collections/stations'
          ? [['POST', '/oapi/collections/stations/items']]
          : [['POST', `/oapi/${scope.value}/execution`]];
  return targets.flatMap(([method, target]) => [undefined, ...tokens, unknown].map((token) => ({ method, target, token })));
}

export function indexOf(objects: readonly ProtectedScope[]): AccessIndex {
  const snapshot = compileSnapshot(objects);
  const built = buildIndex(snapshot.generation, snapshot.lines);
  if (!built.ok) throw new Error(built.error);
  return built.value;
}

export function allowed(index: AccessIndex, p: Probe, nowMs: number): boolean {
  const d = decide(index, DEFAULT_CONFIG, { method: p.method, target: p.target, authorization: p.token === undefined ? undefined : `Bearer ${p.token}` }, nowMs);
  return d.outcome === 'open' || d.outcome === 'granted';
}

/**
 * Whether the loaded objects say, in so many words, that `p` may be answered more openly than under
 * `original`: no object of the original scope holds a token any more and each states so (the file now
 * names another scope, or says `tokens: []`), or the probe's token is held with a later expiry (or none) than before.
 */
export function saysSo(original: ProtectedScope, loaded: readonly ProtectedScope[], p: Probe): boolean {
  const key = scopeKey(scopeOf(original.spec));
  const same = loaded.filter((o) => scopeKey(scopeOf(o.spec)) === key);
  // A stated empty list opens the scope on purpose; an absent one is no statement (it may be a typo).
  if (same.every((o) => Array.isArray(o.spec.tokens) && o.spec.tokens.length === 0)) return true;
  if (p.token === undefined) return false;
  const hash = `sha256:${hashTokenHex(p.token)}`;
  const expiry = (o: ProtectedScope) => tokensOf(o).filter((t) => t.hash === hash).map((t) => (t.expiresAt === undefined ? Infinity : Date.parse(t.expiresAt)));
  const before = Math.max(-Infinity, ...expiry(original));
  const after = Math.max(-Infinity, ...same.flatMap(expiry));
  return after > before;
}

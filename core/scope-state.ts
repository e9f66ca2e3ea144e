/**
 * Whether a scope is closed, and why (docs/access-rules.md): while it has a token record (expired ones
 * included), while it grants a subject (an identity of the OpenID provider), while an object says
 * `closed: true`, or, for a path scope (process execution, stations
 * writes), by default until a token grants it, unless svc-auth runs with `--open-paths-by-default`.
 * The operator's status, its Events and the CLI all say it the same way.
 */
import { isPrefixPath, type Scope } from './scope.js';

/** Why a closed scope is closed: a token record, a subject, `closed: true`, or the default of path scopes. */
export type ClosedBy = 'tokens' | 'subjects' | 'flag' | 'default';

/** `public` is set on an Open state when the scope is declared public (a path open for every method). */
export type ScopeState = { readonly state: 'Closed'; readonly by: ClosedBy } | { readonly state: 'Open'; readonly public?: true };

/**
 * Prefix paths (`wis2downloader`) are open until their first token, like topics: only process execution and
 * stations writes are closed by default. A public flag never opens what tokens, subjects or closed close.
 */
export function stateOf(scope: Scope, tokens: number, closedFlag: boolean, openPathsByDefault: boolean, subjects = 0, publicFlag = false): ScopeState {
  if (tokens > 0) return { state: 'Closed', by: 'tokens' };
  if (subjects > 0) return { state: 'Closed', by: 'subjects' };
  if (closedFlag) return { state: 'Closed', by: 'flag' };
  if (publicFlag && scope.kind === 'path') return { state: 'Open', public: true };
  if (scope.kind === 'path' && !openPathsByDefault && !isPrefixPath(scope.value)) return { state: 'Closed', by: 'default' };
  return { state: 'Open' };
}

/**
 * `Closed, 2 tokens`, `Closed, 0 tokens, 1 subject`, `Closed, 0 tokens (closed: true)`, `Closed, 0 tokens (default)`,
 * `Open, 0 tokens`. Subjects are named only when there are some.
 */
export function describeState(s: ScopeState, tokens: number, subjects = 0): string {
  const count = `${tokens} token${tokens === 1 ? '' : 's'}${subjects > 0 ? `, ${subjects} subject${subjects === 1 ? '' : 's'}` : ''}`;
  if (s.state === 'Open') return s.public ? 'Open, public (every method)' : `Open, ${count}`;
  return `Closed, ${count}${s.by === 'flag' ? ' (closed: true)' : s.by === 'default' ? ' (default)' : ''}`;
}

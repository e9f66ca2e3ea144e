/**
 * Whether a scope is closed, and why (docs/access-rules.md): while it has a token record (expired ones
 * included), while it grants a subject (an identity of the OpenID provider), while an object says
 * `closed: true`, or, for a path scope (process execution, stations
 * writes), by default until a token grants it, unless svc-auth runs with `--open-paths-by-default`.
 * The operator's status, its Events and the CLI all say it the same way.
 */
import { DEFAULT_PREFIXES, isJobsPath, type PathPrefixes } from './path-scope.js';
import { isPrefixPath, type Scope } from './scope.js';

/**
 * Why a closed scope is closed: a token record, a subject, `closed: true`, the default of path scopes, or (for a
 * scope declared public) another scope with a grant that covers its requests, which public never opens.
 */
export type ClosedBy = 'tokens' | 'subjects' | 'flag' | 'default' | 'covered';

/**
 * `public` is set on an Open state when the scope is declared public (a path open for every method); `governing`
 * on a scope closed because others cover it (their keys, `path:processes/station`).
 */
export type ScopeState =
  | { readonly state: 'Closed'; readonly by: ClosedBy; readonly governing?: readonly string[] }
  | { readonly state: 'Open'; readonly public?: true };

/**
 * Prefix paths (`wis2downloader`) are open until their first token, like topics: only process execution, stations
 * writes and unsafe requests on `<api prefix>/jobs` are closed by default. A public flag never opens what tokens,
 * subjects or closed close (and the caller passes it only where public is allowed: path-scope.ts publicRefusal).
 */
export function stateOf(scope: Scope, tokens: number, closedFlag: boolean, openPathsByDefault: boolean, subjects = 0, publicFlag = false, prefixes: PathPrefixes = DEFAULT_PREFIXES): ScopeState {
  if (tokens > 0) return { state: 'Closed', by: 'tokens' };
  if (subjects > 0) return { state: 'Closed', by: 'subjects' };
  if (closedFlag) return { state: 'Closed', by: 'flag' };
  if (publicFlag && scope.kind === 'path') return { state: 'Open', public: true };
  if (scope.kind === 'path' && !openPathsByDefault && (!isPrefixPath(scope.value) || isJobsPath(scope.value, prefixes))) return { state: 'Closed', by: 'default' };
  return { state: 'Open' };
}

/**
 * `Closed, 2 tokens`, `Closed, 0 tokens, 1 subject`, `Closed, 0 tokens (closed: true)`, `Closed, 0 tokens (default)`,
 * `Open, 0 tokens`. Subjects are named only when there are some.
 */
export function describeState(s: ScopeState, tokens: number, subjects = 0): string {
  const count = `${tokens} token${tokens === 1 ? '' : 's'}${subjects > 0 ? `, ${subjects} subject${subjects === 1 ? '' : 's'}` : ''}`;
  if (s.state === 'Open') return s.public ? 'Open, public (every method)' : `Open, ${count}`;
  if (s.by === 'covered') return `Closed, ${count} (declared public, but ${(s.governing ?? []).join(' and ')} covers it: public never opens what a grant or closed: true covers)`;
  return `Closed, ${count}${s.by === 'flag' ? ' (closed: true)' : s.by === 'default' ? ' (default)' : ''}`;
}

import type { Scope } from './scope.js';

/**
 * Whether a scope is closed, and why (ACCESS-RULES.md): while it has a token record (expired ones
 * included), while an object says `closed: true`, or, for a path scope (process execution, stations
 * writes), by default until a token grants it, unless svc-auth runs with `--open-paths-by-default`.
 * The operator's status, its Events and the CLI all say it the same way.
 */
export type ScopeState = { readonly state: 'Closed'; readonly by: 'tokens' | 'flag' | 'default' } | { readonly state: 'Open' };

export function stateOf(scope: Scope, tokens: number, closedFlag: boolean, openPathsByDefault: boolean): ScopeState {
  if (tokens > 0) return { state: 'Closed', by: 'tokens' };
  if (closedFlag) return { state: 'Closed', by: 'flag' };
  if (scope.kind === 'path' && !openPathsByDefault) return { state: 'Closed', by: 'default' };
  return { state: 'Open' };
}

/** `Closed, 2 tokens`, `Closed, 0 tokens (closed: true)`, `Closed, 0 tokens (default)`, `Open, 0 tokens`. */
export function describeState(s: ScopeState, tokens: number): string {
  const count = `${tokens} token${tokens === 1 ? '' : 's'}`;
  if (s.state === 'Open') return `Open, ${count}`;
  return `Closed, ${count}${s.by === 'flag' ? ' (closed: true)' : s.by === 'default' ? ' (default)' : ''}`;
}

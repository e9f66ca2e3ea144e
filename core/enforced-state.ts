/**
 * The state svc-auth enforces on a scope, as `svc auth show`, `svc auth public` and the operator's status report it:
 * core's stateOf for what the scope's own objects say, checked against the decision (decideForScope) where the two
 * can differ — a public scope that another scope's grant covers is closed, a public scope in a refused form or at or
 * above a prefix is not public, and a path spelt below the API prefix is closed where its requests are by default.
 */
import type { AccessIndex } from './access-index.js';
import { decideForScopeAnonymous, type ScopeConfig } from './decide.js';
import { networkReach } from './network.js';
import { publicRefusal } from './path-scope.js';
import { scopeKey, type Scope } from './scope.js';
import { stateOf, type ScopeState } from './scope-state.js';

/** What a scope's own objects hold, merged. */
interface OwnGrants {
  readonly tokens: number;
  readonly subjects: number;
  /** Networks granted (absent: none). */
  readonly networks?: number;
  /**
   * The networks themselves (canonical text), where the caller has them: a network holding every address of a family
   * makes the scope open to those clients, and one wider than an organisation's is named (network.ts networkReach).
   */
  readonly networkCidrs?: readonly string[];
  readonly closedFlag: boolean;
  /** An object of the scope says `public: true`. */
  readonly public: boolean;
}

/** Whether a scope's objects may make it public under these prefixes (a path scope, not refused: publicRefusal). */
function publicAllowed(scope: Scope, config: ScopeConfig): boolean {
  return scope.kind === 'path' && publicRefusal(scope.value, config) === undefined;
}

/**
 * The state of `scope` as svc-auth enforces it over `index` (the compiled snapshot of the same objects). Without an
 * index, the scope's own state (stateOf), with public honoured only where it is allowed.
 */
export function enforcedState(index: AccessIndex | undefined, scope: Scope, own: OwnGrants, config: ScopeConfig): ScopeState {
  const isPublic = own.public && publicAllowed(scope, config);
  const reach = own.networkCidrs !== undefined ? networkReach(own.networkCidrs) : undefined;
  const s = stateOf(scope, own.tokens, own.closedFlag, config.openPathsByDefault === true, own.subjects, isPublic, config, own.networks ?? own.networkCidrs?.length ?? 0, reach);
  if (scope.kind !== 'path' || s.state === 'Closed' || index === undefined || s.everyAddress !== undefined) return s;
  const d = decideForScopeAnonymous(index, scope, config);
  if (d.outcome === 'open' || d.outcome === 'malformed' || !('governing' in d)) return s;
  // A path spelt as a prefix path whose own requests are closed by default (`oapi/collections/stations`).
  if (d.closedByDefault) return { state: 'Closed', by: 'default' };
  // Declared public (where public is refused too): its requests are governed by the scopes that cover them.
  return own.public ? { state: 'Closed', by: 'covered', governing: d.governing.map(scopeKey) } : s;
}

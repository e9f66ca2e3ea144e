/**
 * The two yes/no flags of a scope's spec that commands set and clear as a whole: `closed` (svc auth close/open)
 * and `public` (svc auth public [--off]). A scope may be held by several objects (the CLI's own and
 * hand-written ones); the rules for which object gets a flag, and which lose it, are the same for both.
 */
import { closedByFlag, newProtectedScope, publicByFlag, scopeObjectName, withSpec, type ProtectedScope, type Scope } from '../../core/index.js';

type SpecFlag = 'closed' | 'public';

/** Whether an object says the flag: core's predicates, the ones the compiler and the CLI's checks use. */
const SAYS: Record<SpecFlag, (o: ProtectedScope) => boolean> = { closed: closedByFlag, public: publicByFlag };

/**
 * The objects to write so that the scope says `flag: true`: none when one of them already does; else the
 * scope's own object (by its deterministic name), else its first, else a new one without tokens.
 */
export function withFlagSet(flag: SpecFlag, scope: Scope, namespace: string | undefined, current: readonly ProtectedScope[]): ProtectedScope[] {
  if (current.some(SAYS[flag])) return [];
  const name = scopeObjectName(scope);
  const target = current.find((o) => o.metadata.name === name) ?? current[0] ?? newProtectedScope(scope, name, namespace, []);
  return [withSpec(target, { [flag]: true })];
}

/** The objects to write so that none says `flag`: each one that does, without the field (not `false`: nothing lost, nothing added). */
export function withFlagCleared(flag: SpecFlag, current: readonly ProtectedScope[]): ProtectedScope[] {
  return current.filter(SAYS[flag]).map((o) => withSpec(o, { [flag]: undefined }));
}

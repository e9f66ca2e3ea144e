/**
 * `svc auth public --path P` / `svc auth public --path P --off`: declare a path scope public (`public: true`:
 * every method open, even where paths are closed by default) or take that back. wis2box's read-only processes,
 * which its UI calls without a token, are declared public this way while every other process stays closed.
 * Public contradicts tokens, subjects, networks and `closed: true`: such a scope is refused, nothing is written.
 */
import { closedByFlag, describeState, networksOf, publicByFlag, publicRefusal, scopeKey, subjectsOf, tokensOf, type Scope } from '../../core/index.js';
import type { Mutate } from '../backends/backend.js';
import { usageError } from '../errors.js';
import { structured } from '../output.js';
import {
  followUp, noticingNew, openForWrite, reportInForce, reportNewScope, requireScope, scopeArgs, scopeConfigOf, scopeFromFlags, scopeJson, scopeLabel, updateExisting, writtenObjects,
  type CommandContext, type ScopeFlags, type WriteFlags,
} from './common.js';
import { summarize, summaryState } from './show.js';
import { withFlagCleared, withFlagSet } from './spec-flags.js';

interface PublicOptions extends ScopeFlags, WriteFlags {
  readonly off?: boolean;
  readonly output: 'text' | 'json' | 'yaml';
}

function publicMutation(scope: Scope, namespace: string | undefined): Mutate {
  return (current) => {
    const closing = [
      current.some((o) => tokensOf(o).length > 0) ? 'tokens (remove-tokens)' : '',
      current.some((o) => subjectsOf(o).length > 0) ? 'subjects (remove-subject)' : '',
      current.some((o) => networksOf(o).length > 0) ? 'networks (remove-network)' : '',
      current.some(closedByFlag) ? 'closed: true (open)' : '',
    ].filter((c) => c !== '');
    if (closing.length > 0) throw usageError(`${scopeKey(scope)} cannot be public while it has ${closing.join(', ')}: a public scope is open for every method (nothing was changed)`);
    return withFlagSet('public', scope, namespace, current);
  };
}

function notPublicMutation(scope: Scope): Mutate {
  return requireScope(scope, 'no public: true', (current) => withFlagCleared('public', current));
}

export async function setPublic(ctx: CommandContext, options: PublicOptions): Promise<number> {
  const scope = scopeFromFlags(options, ctx);
  if (scope.kind !== 'path') throw usageError(`only a path scope can be public (give --path; see ${ctx.commandPath} --help)`);
  const on = options.off !== true;
  // `oapi` would open every execution closed by default; `oapi/collections/x` names what other scopes govern.
  const refused = on ? publicRefusal(scope.value, ctx.prefixes) : undefined;
  if (refused !== undefined) throw usageError(`--path ${scope.value} cannot be public: ${refused} (nothing was changed)`);
  const target = await openForWrite(ctx, options);
  const { store } = target;
  let existed = true;
  const result = await updateExisting(ctx, store, () => store.update(scope, on ? noticingNew(publicMutation(scope, store.namespace), (e) => (existed = e)) : notPublicMutation(scope)));
  const isPublic = result.objects.some(publicByFlag);
  // As svc-auth enforces it: a public scope that another scope's grant covers stays closed.
  const state = summaryState(summarize(await store.list(), ctx.io.now(), scope, scopeConfigOf(ctx))[0]!);
  if (options.output === 'text') {
    const did = result.written.length === 0 ? (on ? 'was already public' : 'was not public') : on ? 'is public' : 'is no longer public';
    ctx.io.out(`${scopeLabel(scope)} ${did}; ${result.written.length > 0 ? 'the store now says' : 'still'} ${describeState(state, 0)} (${store.where})\n`);
  } else {
    ctx.io.out(structured(options.output, { scope: scopeJson(scope), store: store.where, written: result.written, public: isPublic, state: state.state }));
  }
  if (!existed) await reportNewScope(ctx, store, scope, `${followUp(ctx, 'public')} ${scopeArgs(scope)} --off`);
  await reportInForce(ctx, target, writtenObjects(result), !on);
  return 0;
}

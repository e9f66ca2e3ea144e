/**
 * `svc auth close SCOPE` / `svc auth open SCOPE`: set or clear `closed: true`, which keeps a scope closed
 * with zero tokens (an embargoed dataset whose tokens come later). Closing writes the scope's own object
 * (created, with no token, when the scope has none); opening clears the flag on every object of the scope.
 * Tokens are never touched: a scope that still has tokens stays closed, and the answer says so.
 */
import { closedAside, closedByFlag, describeState, publicByFlag, scopeKey, stateOf, whyClosed, type Scope, type ScopeState, tokenHashesOf } from '../../core/index.js';
import type { Mutate } from '../backends/backend.js';
import { usageError } from '../errors.js';
import { structured } from '../output.js';
import {
  followUp, networkCount, noticingNew, openForWrite, reportInForce, reportNewScope, requireScope, scopeArgs, scopeFromFlags, scopeJson, scopeLabel, subjectCount, updateExisting,
  writtenObjects, type CommandContext, type ScopeFlags, type WriteFlags,
} from './common.js';
import { withFlagCleared, withFlagSet } from './spec-flags.js';

interface CloseOptions extends ScopeFlags, WriteFlags {
  readonly output: 'text' | 'json' | 'yaml';
}

function closeMutation(scope: Scope, namespace: string | undefined): Mutate {
  return (current) => {
    // Public and closed contradict each other (the CRD refuses the pair): say so rather than write a refused object.
    if (current.some(publicByFlag)) throw usageError(`${scopeKey(scope)} is public (every method open): take that back first with public --off, then close it (nothing was changed)`);
    return withFlagSet('closed', scope, namespace, current);
  };
}

function openMutation(scope: Scope): Mutate {
  return requireScope(scope, 'no closed: true', (current) => withFlagCleared('closed', current));
}

async function setClosed(ctx: CommandContext, options: CloseOptions, close: boolean): Promise<number> {
  const scope = scopeFromFlags(options, ctx);
  const target = await openForWrite(ctx, options);
  const { store } = target;
  let existed = true;
  const result = await updateExisting(ctx, store, () => store.update(scope, close ? noticingNew(closeMutation(scope, store.namespace), (e) => (existed = e)) : openMutation(scope)));
  const tokens = tokenHashesOf(result.objects).size;
  const state = stateOf(scope, tokens, result.objects.some(closedByFlag), ctx.openPathsByDefault, subjectCount(result.objects), false, ctx.prefixes, networkCount(result.objects));
  const now = describeState(state, tokens, subjectCount(result.objects), networkCount(result.objects));
  if (options.output === 'text') {
    const did = result.written.length === 0 ? (close ? 'was already closed (closed: true)' : 'was not closed by closed: true') : close ? 'is closed (closed: true)' : 'no longer says closed: true';
    const why = close ? '' : staysClosed(state);
    ctx.io.out(`${scopeLabel(scope)} ${did}${why}; ${result.written.length > 0 ? 'the store now says' : 'still'} ${now} (${store.where})\n`);
  } else {
    ctx.io.out(structured(options.output, { scope: scopeJson(scope), store: store.where, written: result.written, state: state.state, ...(state.state === 'Closed' ? { closedBy: state.by } : {}), tokens }));
  }
  if (!existed) await reportNewScope(ctx, store, scope, `${followUp(ctx, 'open')} ${scopeArgs(scope)}`);
  await reportInForce(ctx, target, writtenObjects(result), close);
  return 0;
}

export const close = (ctx: CommandContext, options: CloseOptions): Promise<number> => setClosed(ctx, options, true);
export const open = (ctx: CommandContext, options: CloseOptions): Promise<number> => setClosed(ctx, options, false);

/** Why a scope stays closed once opened, where the counts say it (what to remove); describeState says the rest. */
function staysClosed(state: ScopeState): string {
  if (state.state !== 'Closed' || closedAside(state) !== '') return '';
  return `: it stays closed (${whyClosed(state).reason}; remove them with ${state.by === 'tokens' ? 'remove-tokens' : state.by === 'networks' ? 'remove-network' : 'remove-subject'})`;
}

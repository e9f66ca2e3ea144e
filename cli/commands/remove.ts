/**
 * Removing tokens edits every object of the scope (the CLI's and hand-written ones). When the last token
 * goes, the objects stay, with an empty token list: the scope is open, `show` still lists it (Open, 0
 * tokens), and a GitOps repository keeps a file whose diff shows the tokens leaving. Both backends do
 * the same; nothing is ever deleted.
 */
import { closedByFlag, hashToken, importedIdOf, scopeKey, stateOf, TOKEN_ID_PATTERN, tokenIdOf, tokensOf, whyClosed, withSpec, type ProtectedScope, type Scope, type ScopeState, type TokenRecord } from '../../core/index.js';
import type { Mutate } from '../backends/backend.js';
import { failure, usageError } from '../errors.js';
import { structured } from '../output.js';
import { followUp, networkCount, scopeArgs, subjectCount, scopeFromFlags, scopeJson, scopeLabel, tokenArgument, type CommandContext, type ScopeFlags } from './common.js';

interface RemoveOptions extends ScopeFlags {
  readonly output: 'text' | 'json' | 'yaml';
}

interface RemoveTokenOptions extends RemoveOptions {
  readonly id?: string;
}

export function removeAllMutation(): Mutate {
  return (current) => current.filter((o) => tokensOf(o).length > 0).map((o) => withSpec(o, { tokens: [] }));
}

/** What remove-token looks for: an id, or a token's hash (the token too, to recognise an imported PBKDF2 hash). */
interface TokenMatch {
  id: string;
  hash?: string;
  /** The plaintext, kept in memory only: an imported hash can only be found by deriving it from the token. */
  readonly token?: string;
}

/**
 * Removes the token with this id from every object of the scope; refuses (on the first look) when none has it.
 * A token that matches no SHA-256 record is tried against the scope's imported hashes, and `match` then names the
 * imported record (its id and hash), so the caller reports what was removed.
 */
export function removeOneMutation(scope: Scope, match: TokenMatch, hint: string): Mutate {
  const hit = (t: TokenRecord) => (match.hash !== undefined ? t.hash === match.hash : t.id === match.id);
  return (current, attempt) => {
    if (match.token !== undefined && !current.some((o) => tokensOf(o).some(hit))) {
      const imported = importedIdOf(match.token, current.flatMap((o) => tokensOf(o).map((t) => t.hash)));
      if (imported) Object.assign(match, imported);
    }
    const holders = current.filter((o) => tokensOf(o).some(hit));
    // On a retry the token may have gone already (a concurrent removal): that is the outcome asked for.
    if (holders.length === 0 && attempt === 0) {
      const what = match.hash !== undefined ? `the given token (id ${match.id}) is not a token of ${scopeKey(scope)}` : `no token with id ${match.id} in ${scopeKey(scope)}`;
      throw failure(`${what}: list the ids with ${hint} (nothing was changed)`);
    }
    return holders.map((o) => withSpec(o, { tokens: tokensOf(o).filter((t) => !hit(t)) }));
  };
}

function remaining(objects: readonly ProtectedScope[]): number {
  return new Set(objects.flatMap((o) => tokensOf(o).map((t) => t.hash))).size;
}

function report(ctx: CommandContext, options: RemoveOptions, scope: Scope, where: string, removed: readonly string[], left: number, text: string, state: ScopeState): void {
  if (options.output === 'text') {
    ctx.io.out(`${text}\n`);
    return;
  }
  ctx.io.out(structured(options.output, { scope: scopeJson(scope), store: where, removed, remainingTokens: left, state: state.state, ...(state.state === 'Closed' ? { closedBy: state.by } : {}) }));
}

export async function removeTokens(ctx: CommandContext, options: RemoveOptions): Promise<number> {
  const scope = scopeFromFlags(options, ctx);
  const store = await ctx.openStore();
  let removed: string[] = [];
  const mutate = removeAllMutation();
  const result = await store.update(scope, (current, attempt) => {
    removed = [...new Set(current.flatMap((o) => tokensOf(o).map((t) => t.id)))].sort();
    return mutate(current, attempt);
  });
  const left = remaining(result.objects);
  const state = stateOf(scope, left, result.objects.some(closedByFlag), ctx.openPathsByDefault, subjectCount(result.objects), false, ctx.prefixes, networkCount(result.objects));
  const hint = state.state === 'Closed' && (state.by === 'subjects' || state.by === 'networks') ? `; ${followUp(ctx, 'show')} lists them` : state.state === 'Closed' && state.by === 'flag' ? `; ${followUp(ctx, 'open')} clears it` : '';
  const now = state.state === 'Open' ? 'it is open' : `it stays closed (${whyClosed(state).reason}${hint})`;
  const text =
    removed.length === 0
      ? `${scopeLabel(scope)} had no tokens: ${now} (${store.where})`
      : `Removed ${removed.length} token${removed.length === 1 ? '' : 's'} (${removed.join(', ')}) from ${scopeLabel(scope)}: ${now} now (${store.where})`;
  report(ctx, options, scope, store.where, removed, left, text, state);
  return 0;
}

export async function removeToken(ctx: CommandContext, tokenArg: string | undefined, options: RemoveTokenOptions): Promise<number> {
  const scope = scopeFromFlags(options, ctx);
  if ((tokenArg === undefined) === (options.id === undefined)) {
    throw usageError(`give the token or --id ID, exactly one of them (see ${ctx.commandPath} --help)`);
  }
  let match: TokenMatch;
  if (options.id !== undefined) {
    const id = options.id.trim().toLowerCase();
    if (!TOKEN_ID_PATTERN.test(id)) throw usageError(`--id: "${options.id}" is not a token id (12 hex characters, as svc auth show lists them)`);
    match = { id };
  } else {
    const token = await tokenArgument(tokenArg!, ctx.io);
    const hash = hashToken(token);
    match = { id: tokenIdOf(hash), hash, token };
  }
  const store = await ctx.openStore();
  const hint = `${followUp(ctx, 'show')} ${scopeArgs(scope)}`;
  const result = await store.update(scope, removeOneMutation(scope, match, hint));
  const left = remaining(result.objects);
  const state = stateOf(scope, left, result.objects.some(closedByFlag), ctx.openPathsByDefault, subjectCount(result.objects), false, ctx.prefixes, networkCount(result.objects));
  const last = state.state === 'Open' ? 'the scope is open now' : `the scope stays closed (${whyClosed(state).reason})`;
  const text =
    left > 0
      ? `Removed token ${match.id} from ${scopeLabel(scope)}: ${left} token${left === 1 ? '' : 's'} remain${left === 1 ? 's' : ''}, it stays closed (${store.where})`
      : `Removed token ${match.id} from ${scopeLabel(scope)}: it was the last one, ${last} (${store.where})`;
  report(ctx, options, scope, store.where, [match.id], left, text, state);
  return 0;
}

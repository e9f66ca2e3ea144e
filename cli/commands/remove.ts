/**
 * Removing tokens edits every object of the scope (the CLI's and hand-written ones). When the last token
 * goes, the objects stay, with an empty token list: the scope is open, `show` still lists it (Open, 0
 * tokens), and a GitOps repository keeps a file whose diff shows the tokens leaving. Both backends do
 * the same; nothing is ever deleted.
 */
import {
  closedByFlag, hashToken, importedIdOf, scopeKey, scopeOf, stateOf, TOKEN_ID_PATTERN, tokenIdOf, tokensOf, whyClosed, withSpec, type ProtectedScope, type Scope, type ScopeState,
  type TokenRecord, tokenHashesOf } from '../../core/index.js';
import type { Mutate, ScopeStore } from '../backends/backend.js';
import { CliError, failure, usageError } from '../errors.js';
import { structured } from '../output.js';
import {
  followUp, networkCount, openForWrite, reportInForce, requireScope, scopeArgs, subjectCount, scopeFromFlags, scopeJson, scopeLabel, tokenArgument, updateExisting, writtenObjects,
  type CommandContext, type ScopeFlags, type WriteFlags,
} from './common.js';

interface RemoveOptions extends ScopeFlags, WriteFlags {
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
  return requireScope(scope, 'no token', (current, attempt) => {
    if (match.token !== undefined && !current.some((o) => tokensOf(o).some(hit))) {
      const imported = importedIdOf(match.token, [...tokenHashesOf(current)]);
      if (imported) Object.assign(match, imported);
    }
    const holders = current.filter((o) => tokensOf(o).some(hit));
    // On a retry the token may have gone already (a concurrent removal): that is the outcome asked for.
    if (holders.length === 0 && attempt === 0) {
      const what = match.hash !== undefined ? `the given token (id ${match.id}) is not a token of ${scopeKey(scope)}` : `no token with id ${match.id} in ${scopeKey(scope)}`;
      throw new NotHeld(`${what}: list the ids with ${hint} (nothing was changed)`);
    }
    return holders.map((o) => withSpec(o, { tokens: tokensOf(o).filter((t) => !hit(t)) }));
  });
}

/** The token is not one of the scope's: the command then looks for the scope that holds it. */
class NotHeld extends CliError {
  constructor(message: string) {
    super(message, 1);
  }
}

/**
 * The scopes of the store that hold the token (by hash, or by id when only the id was given), as `--topic-hierarchy
 * a.b` arguments, so a refusal names where it is. Never the token: the id only.
 */
async function holdersElsewhere(store: ScopeStore, scope: Scope, match: TokenMatch): Promise<Scope[]> {
  const found = new Map<string, Scope>();
  for (const s of await store.list()) {
    const other = scopeOf(s.object.spec);
    if (scopeKey(other) === scopeKey(scope)) continue;
    const hashes = tokensOf(s.object).map((t) => t.hash);
    const held = tokensOf(s.object).some((t) => (match.hash !== undefined ? t.hash === match.hash : t.id === match.id))
      || (match.token !== undefined && importedIdOf(match.token, hashes) !== undefined);
    if (held) found.set(scopeKey(other), other);
  }
  return [...found.values()];
}

function remaining(objects: readonly ProtectedScope[]): number {
  return tokenHashesOf(objects).size;
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
  const target = await openForWrite(ctx, options);
  const { store } = target;
  let removed: string[] = [];
  const mutate = removeAllMutation();
  const result = await updateExisting(ctx, store, () => store.update(scope, requireScope(scope, 'no token', (current, attempt) => {
    removed = [...new Set(current.flatMap((o) => tokensOf(o).map((t) => t.id)))].sort();
    return mutate(current, attempt);
  })));
  const left = remaining(result.objects);
  const state = stateOf(scope, left, result.objects.some(closedByFlag), ctx.openPathsByDefault, subjectCount(result.objects), false, ctx.prefixes, networkCount(result.objects));
  const hint = state.state === 'Closed' && (state.by === 'subjects' || state.by === 'networks') ? `; ${followUp(ctx, 'show')} lists them` : state.state === 'Closed' && state.by === 'flag' ? `; ${followUp(ctx, 'open')} clears it` : '';
  const text =
    removed.length === 0
      ? `${scopeLabel(scope)} had no tokens: ${state.state === 'Open' ? 'it is open' : `it stays closed (${whyClosed(state).reason}${hint})`} (${store.where})`
      : `Removed ${removed.length} token${removed.length === 1 ? '' : 's'} (${removed.join(', ')}) from ${scopeLabel(scope)} in the store: ${state.state === 'Open' ? 'it opens' : `it stays closed (${whyClosed(state).reason}${hint})`} (${store.where})`;
  report(ctx, options, scope, store.where, removed, left, text, state);
  await reportInForce(ctx, target, writtenObjects(result), true);
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
  const target = await openForWrite(ctx, options);
  const { store } = target;
  const hint = `${followUp(ctx, 'show')} ${scopeArgs(scope)}`;
  const result = await updateExisting(ctx, store, async () => {
    try {
      return await store.update(scope, removeOneMutation(scope, match, hint));
    } catch (e) {
      if (!(e instanceof NotHeld)) throw e;
      // Name the scope that holds it (its id, never the token), so the right command is one copy away.
      const elsewhere = await holdersElsewhere(store, scope, match);
      if (elsewhere.length === 0) throw failure(e.message);
      const where = elsewhere.map(scopeKey).join(' and ');
      throw failure(`token ${match.id} is not a token of ${scopeKey(scope)}, but of ${where}: to remove it there, ${followUp(ctx, 'remove-token')} ${scopeArgs(elsewhere[0]!)} --id ${match.id} (nothing was changed)`);
    }
  });
  const left = remaining(result.objects);
  const state = stateOf(scope, left, result.objects.some(closedByFlag), ctx.openPathsByDefault, subjectCount(result.objects), false, ctx.prefixes, networkCount(result.objects));
  const last = state.state === 'Open' ? 'the scope opens' : `the scope stays closed (${whyClosed(state).reason})`;
  const text =
    left > 0
      ? `Removed token ${match.id} from ${scopeLabel(scope)} in the store: ${left} token${left === 1 ? '' : 's'} remain${left === 1 ? 's' : ''}, it stays closed (${store.where})`
      : `Removed token ${match.id} from ${scopeLabel(scope)} in the store: it was the last one, ${last} (${store.where})`;
  report(ctx, options, scope, store.where, [match.id], left, text, state);
  await reportInForce(ctx, target, writtenObjects(result), true);
  return 0;
}

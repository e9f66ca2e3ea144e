// `svc auth add-token`: a token for a scope, generated or given, stored as its hash and shown once.
import {
  checkSuppliedToken,
  formatGeneratedToken,
  hashToken,
  isDateTime,
  MAX_DESCRIPTION_LENGTH,
  MAX_TOKENS_PER_OBJECT,
  newProtectedScope,
  RANDOM_BYTES,
  scopeKey,
  scopeObjectName,
  tokenIdOf,
  tokensOf,
  withSpec,
  type ProtectedScope,
  type Scope,
  type TokenRecord, tokenHashesOf } from '../../core/index.js';
import { DURATION_UNITS_MS, parseDuration } from '../../lib/duration.js';
import type { Mutate } from '../backends/backend.js';
import { failure, usageError } from '../errors.js';
import { isoSeconds, manifestOf, structured } from '../output.js';
import {
  followUp, noticingNew, openForWrite, reportInForce, reportNewScope, scopeArgs, scopeFromFlags, scopeJson, scopeLabel, tokenArgument, writtenObjects, type CommandContext, type ScopeFlags,
  type WriteFlags,
} from './common.js';

interface AddTokenOptions extends ScopeFlags, WriteFlags {
  readonly expiresIn?: string;
  readonly expiresAt?: string;
  readonly description?: string;
  readonly dryRun?: boolean;
  readonly output: 'text' | 'json' | 'yaml';
}

/** Far enough for any real token, near enough to stay a valid date. */
const MAX_LIFETIME_MS = 100 * 365 * DURATION_UNITS_MS.d;
/** A bare `--expires-in 90` could mean seconds or days: a lifetime needs its unit written. */
const LIFETIME_RULES = { positive: true, maxMs: MAX_LIFETIME_MS, requireUnit: true } as const;

function lifetimeMs(text: string): number {
  try {
    return parseDuration(text, LIFETIME_RULES);
  } catch (e) {
    throw usageError(`--expires-in: ${(e as Error).message}`);
  }
}

/** The expiry the flags ask for, checked: a positive duration, or an RFC 3339 time in the future. */
export function expiryFrom(options: Pick<AddTokenOptions, 'expiresIn' | 'expiresAt'>, nowMs: number, commandPath: string): string | undefined {
  if (options.expiresIn !== undefined && options.expiresAt !== undefined) {
    throw usageError(`give --expires-in or --expires-at, not both (see ${commandPath} --help)`);
  }
  if (options.expiresIn !== undefined) {
    return isoSeconds(nowMs + lifetimeMs(options.expiresIn));
  }
  if (options.expiresAt !== undefined) {
    if (!isDateTime(options.expiresAt)) {
      throw usageError(`--expires-at: "${options.expiresAt}" is not an RFC 3339 time such as 2027-01-01T00:00:00Z`);
    }
    const at = Date.parse(options.expiresAt);
    if (at <= nowMs) throw usageError(`--expires-at: ${options.expiresAt} is not in the future`);
    return new Date(at).toISOString().replace('.000Z', 'Z');
  }
  return undefined;
}

/** The edit: append the record to the scope's deterministic-name object (created if missing). Pure. */
export function addTokenMutation(scope: Scope, record: TokenRecord, namespace: string | undefined): Mutate {
  const name = scopeObjectName(scope);
  return (current) => {
    for (const o of current) {
      for (const t of tokensOf(o)) {
        if (t.hash === record.hash) throw failure(`this token is already a token of ${scopeKey(scope)} (id ${record.id}, in ${o.metadata.name}); nothing was changed`);
        if (t.id === record.id) throw failure(`another token of ${scopeKey(scope)} has the same id ${record.id}; generate a different token (nothing was changed)`);
      }
    }
    if (current.some((o) => o.spec.public === true)) throw usageError(`${scopeKey(scope)} is public (every method open): take that back first with public --off (nothing was changed)`);
    const target = current.find((o) => o.metadata.name === name) ?? newProtectedScope(scope, name, namespace, []);
    const tokens = tokensOf(target);
    if (tokens.length >= MAX_TOKENS_PER_OBJECT) {
      throw failure(`${name} already holds the maximum of ${MAX_TOKENS_PER_OBJECT} tokens: remove unused or expired ones first (nothing was changed)`);
    }
    return [withSpec(target, { tokens: [...tokens, record] })];
  };
}

export async function addToken(ctx: CommandContext, tokenArg: string | undefined, options: AddTokenOptions): Promise<number> {
  // Every check happens before the store is touched.
  const scope = scopeFromFlags(options, ctx);
  const nowMs = ctx.io.now();
  const expiresAt = expiryFrom(options, nowMs, ctx.commandPath);
  checkDescription(options.description);
  const generated = tokenArg === undefined;
  const token = await theToken(ctx, tokenArg);
  const record = tokenRecordOf(token, nowMs, options.description, expiresAt);

  const target = await openForWrite(ctx, options);
  const { store } = target;
  let existed = true;
  const result = await store.update(scope, noticingNew(addTokenMutation(scope, record, store.namespace), (e) => (existed = e)), { dryRun: options.dryRun === true });
  const added: Added = {
    scope, record, generated, token, where: store.where,
    object: result.objects.find((o) => o.metadata.name === scopeObjectName(scope))!,
    total: tokenHashesOf(result.objects).size,
  };
  if (options.dryRun && options.output !== 'text') printManifest(ctx, added, options.output);
  else printAdded(ctx, added, options);
  if (!existed) await reportNewScope(ctx, store, scope, `${followUp(ctx, 'remove-token')} ${scopeArgs(scope)} --id ${record.id}`, options.dryRun === true);
  // A first token closes an open scope: what was open to everyone (and cached as allowed) is taken away.
  await reportInForce(ctx, target, writtenObjects(result), added.total === 1, options.dryRun === true);
  return 0;
}

function checkDescription(description: string | undefined): void {
  if (description === undefined) return;
  if (description.length > MAX_DESCRIPTION_LENGTH) throw usageError(`--description: at most ${MAX_DESCRIPTION_LENGTH} characters (this one has ${description.length})`);
  if (/\p{Cc}/u.test(description)) throw usageError('--description: no control characters or line breaks');
}

/** The token given (checked), or a new one when none was. */
async function theToken(ctx: CommandContext, tokenArg: string | undefined): Promise<string> {
  if (tokenArg === undefined) return formatGeneratedToken(ctx.io.random(RANDOM_BYTES));
  const token = await tokenArgument(tokenArg, ctx.io);
  const checked = checkSuppliedToken(token);
  if (!checked.ok) throw usageError(`invalid token: ${checked.error}`);
  return token;
}

function tokenRecordOf(token: string, nowMs: number, description: string | undefined, expiresAt: string | undefined): TokenRecord {
  const hash = hashToken(token);
  return {
    id: tokenIdOf(hash),
    hash,
    ...(description !== undefined && description !== '' ? { description } : {}),
    createdAt: isoSeconds(nowMs),
    ...(expiresAt !== undefined ? { expiresAt } : {}),
  };
}

/** What add-token did: the record in its object, and the token (printed only when generated here). */
interface Added {
  readonly scope: Scope;
  readonly record: TokenRecord;
  readonly generated: boolean;
  readonly token: string;
  readonly where: string;
  readonly object: ProtectedScope;
  /** Tokens of the scope now, over all its objects. */
  readonly total: number;
}

/** --dry-run -o yaml|json: the manifest on stdout (for a GitOps repository), the token on stderr. */
function printManifest(ctx: CommandContext, a: Added, output: 'json' | 'yaml'): void {
  ctx.io.out(structured(output, manifestOf(a.object)));
  if (a.generated) ctx.io.err(`token ${a.token} (id ${a.record.id}): dry run, nothing was written; store the token now, it is in the manifest only as a hash\n`);
  else ctx.io.err(`token id ${a.record.id}: dry run, nothing was written\n`);
}

function printAdded(ctx: CommandContext, a: Added, options: AddTokenOptions): void {
  const { io } = ctx;
  const { record, scope, total } = a;
  const name = a.object.metadata.name;
  if (options.output !== 'text') {
    io.out(
      structured(options.output, {
        ...(a.generated ? { token: a.token } : {}),
        id: record.id,
        scope: scopeJson(scope),
        object: name,
        store: a.where,
        state: 'Closed',
        tokens: total,
        createdAt: record.createdAt,
        ...(record.expiresAt !== undefined ? { expiresAt: record.expiresAt } : {}),
        ...(record.description !== undefined ? { description: record.description } : {}),
        ...(options.dryRun ? { dryRun: true } : {}),
      }),
    );
  } else if (options.dryRun) {
    printDryRun(ctx, a);
    return;
  } else {
    const lines = [
      ...(a.generated ? [`Token:   ${a.token}`] : []),
      `Id:      ${record.id}`,
      `Scope:   ${scopeLabel(scope)} (closed, ${total} token${total === 1 ? '' : 's'})`,
      `Object:  ${name} in ${a.where}`,
      `Expires: ${record.expiresAt ?? 'never'}`,
    ];
    io.out(`${lines.join('\n')}\n`);
  }
  if (a.generated && !options.dryRun) {
    io.err(`Store this token now: it is shown only once. Remove it with: ${followUp(ctx, 'remove-token')} ${scopeArgs(scope)} --id ${record.id}\n`);
  }
}

/**
 * --dry-run in text: what the object would become, and nothing that treats the token as stored. A token generated
 * for a dry run is not shown (it is stored nowhere; handing it out would give someone a token that never works).
 */
function printDryRun(ctx: CommandContext, a: Added): void {
  const lines = [
    'Dry run: nothing was written.',
    `Id:      ${a.record.id} (${a.generated ? 'a token generated for this dry run only: not stored, not shown' : 'the token given: not stored'})`,
    `Scope:   ${scopeLabel(a.scope)} (would be closed, ${a.total} token${a.total === 1 ? '' : 's'})`,
    `Object:  ${a.object.metadata.name} in ${a.where}`,
    `Expires: ${a.record.expiresAt ?? 'never'}`,
    `Add it for real: ${followUp(ctx, 'add-token')} ${scopeArgs(a.scope)}${a.generated ? '' : ' TOKEN'}`,
  ];
  ctx.io.out(`${lines.join('\n')}\n`);
}

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
  type ProtectedScope,
  type Scope,
  type TokenRecord,
} from '../../core/index.js';
import { DURATION_UNITS_MS, parseDuration } from '../../lib/duration.js';
import type { Mutate } from '../backends/backend.js';
import { failure, usageError } from '../errors.js';
import { isoSeconds, manifestOf, structured } from '../output.js';
import { scopeArgs, scopeFromFlags, scopeJson, scopeLabel, tokenArgument, type CommandContext, type ScopeFlags } from './common.js';

export interface AddTokenOptions extends ScopeFlags {
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
    const updated: ProtectedScope = { ...target, spec: { ...target.spec, tokens: [...tokens, record] } as ProtectedScope['spec'] };
    return [updated];
  };
}

export async function addToken(ctx: CommandContext, tokenArg: string | undefined, options: AddTokenOptions): Promise<number> {
  const { io } = ctx;
  // Every check happens before the store is touched.
  const scope = scopeFromFlags(options, ctx.commandPath);
  const nowMs = io.now();
  const expiresAt = expiryFrom(options, nowMs, ctx.commandPath);
  const description = options.description;
  if (description !== undefined) {
    if (description.length > MAX_DESCRIPTION_LENGTH) throw usageError(`--description: at most ${MAX_DESCRIPTION_LENGTH} characters (this one has ${description.length})`);
    if (/\p{Cc}/u.test(description)) throw usageError('--description: no control characters or line breaks');
  }
  let token: string;
  const generated = tokenArg === undefined;
  if (generated) {
    token = formatGeneratedToken(io.random(RANDOM_BYTES));
  } else {
    token = await tokenArgument(tokenArg, io);
    const checked = checkSuppliedToken(token);
    if (!checked.ok) throw usageError(`invalid token: ${checked.error}`);
  }
  const hash = hashToken(token);
  const record: TokenRecord = {
    id: tokenIdOf(hash),
    hash,
    ...(description !== undefined && description !== '' ? { description } : {}),
    createdAt: isoSeconds(nowMs),
    ...(expiresAt !== undefined ? { expiresAt } : {}),
  };

  const store = await ctx.openStore();
  const result = await store.update(scope, addTokenMutation(scope, record, store.namespace), { dryRun: options.dryRun === true });
  const name = scopeObjectName(scope);
  const object = result.objects.find((o) => o.metadata.name === name)!;
  const total = new Set(result.objects.flatMap((o) => tokensOf(o).map((t) => t.hash))).size;

  if (options.dryRun && options.output !== 'text') {
    io.out(structured(options.output, manifestOf(object)));
    if (generated) io.err(`token ${token} (id ${record.id}): dry run, nothing was written; store the token now, it is in the manifest only as a hash\n`);
    else io.err(`token id ${record.id}: dry run, nothing was written\n`);
    return 0;
  }
  if (options.output !== 'text') {
    io.out(
      structured(options.output, {
        ...(generated ? { token } : {}),
        id: record.id,
        scope: scopeJson(scope),
        object: name,
        store: store.where,
        state: 'Closed',
        tokens: total,
        createdAt: record.createdAt,
        ...(record.expiresAt !== undefined ? { expiresAt: record.expiresAt } : {}),
        ...(record.description !== undefined ? { description: record.description } : {}),
        ...(options.dryRun ? { dryRun: true } : {}),
      }),
    );
  } else {
    const lines = [
      ...(generated ? [`Token:   ${token}`] : []),
      `Id:      ${record.id}`,
      `Scope:   ${scopeLabel(scope)} (closed, ${total} token${total === 1 ? '' : 's'})`,
      `Object:  ${name} in ${store.where}`,
      `Expires: ${record.expiresAt ?? 'never'}`,
      ...(options.dryRun ? ['Dry run: nothing was written.'] : []),
    ];
    io.out(`${lines.join('\n')}\n`);
  }
  if (generated) {
    io.err(`Store this token now: it is shown only once. Remove it with: ${ctx.commandPath.replace(/add-token$/, 'remove-token')} ${scopeArgs(scope)} --id ${record.id}\n`);
  }
  return 0;
}

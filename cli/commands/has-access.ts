// `svc auth has-access-topic`: whether a token, an identity or an address gets in, decided as svc-auth decides it.
import {
  buildIndex, checkSubject, compileSnapshot, decideForScope, decideForScopeAnonymous, decideForScopeAs, decideImportedSync, describeState, entryOf, parseAddressInto, scopeKey,
  type AccessIndex, type Decision, type Network, type Scope, type ScopeConfig,
} from '../../core/index.js';
import { failure, usageError } from '../errors.js';
import { structured } from '../output.js';
import { followUp, scopeArgs, scopeConfigOf, scopeFromFlags, scopeJson, tokenArgument, type CommandContext, type ScopeFlags } from './common.js';

interface HasAccessOptions extends ScopeFlags {
  readonly output: 'text' | 'json' | 'yaml';
  /** Ask for an identity instead of a token: the username claim and the groups claim's entries. */
  readonly user?: string;
  readonly group?: readonly string[];
  /** Ask for a client address: a network of a governing scope grants it; else the token or identity decides. */
  readonly from?: string;
}

interface AccessAnswer {
  readonly granted: boolean;
  readonly outcome: Decision['outcome'] | 'granted-network';
  readonly reason: string;
  /** The closed scopes whose tokens decide (empty when the scope is open). */
  readonly governing: readonly string[];
  /** The id of the token checked (never the token), when it could be hashed. */
  readonly tokenId?: string;
  /** The scope of the token (or subject) that granted access. */
  readonly grantedBy?: string;
  /** For an identity: the user asked about, and the group that granted, if a group did. */
  readonly user?: string;
  readonly group?: string;
  /** For an address (--from): the address asked about, and the network that granted it, if one did. */
  readonly address?: string;
  readonly network?: string;
}

/** The decision as the CLI reports it; the wording names scopes and token ids, never the token. */
export function explain(scope: Scope, decision: Decision, addToken = 'svc auth add-token'): AccessAnswer {
  const target = scopeKey(scope);
  if ('closedByDefault' in decision && decision.closedByDefault && decision.outcome !== 'granted' && decision.outcome !== 'granted-identity') {
    // No scope of the store covers this path: svc-auth denies it by default (docs/access-rules.md). The stand-in names
    // the scope a token would go to (`oapi/jobs` for a job below it, the special form for a path spelt below the API).
    const to = decision.governing[0] ?? scope;
    const via = scopeKey(to) === target ? '' : ` (governed by ${scopeKey(to)})`;
    return {
      granted: false,
      outcome: decision.outcome,
      reason: `${target}${via} is ${describeState({ state: 'Closed', by: 'default' }, 0)}: no token of a scope covering it exists; add one with ${addToken} ${scopeArgs(to)}`,
      governing: [scopeKey(to)],
      ...('tokenId' in decision && decision.tokenId !== undefined ? { tokenId: decision.tokenId } : {}),
    };
  }
  if (decision.outcome === 'open') {
    return { granted: true, outcome: 'open', reason: `${target} is open: no closed scope governs it, so no token is needed`, governing: [] };
  }
  if (decision.outcome === 'malformed') return { granted: false, outcome: 'malformed', reason: decision.reason, governing: [] };
  const governing = decision.governing.map(scopeKey);
  const by = governing.length === 1 ? governing[0]! : governing.join(' and ');
  const wording: Wording = { target, governing, by, via: governing.length === 1 && governing[0] === target ? '' : ` (governed by ${by})` };
  switch (decision.outcome) {
    case 'granted':
    case 'granted-identity':
      return grantAnswer(wording, decision);
    case 'granted-network': {
      const grantedBy = scopeKey(decision.scope);
      const reason = `address ${decision.address} is in network ${decision.network} of ${grantedBy}${grantedBy === target ? '' : `, which governs ${target}`}`;
      return { granted: true, outcome: 'granted-network', reason, governing, grantedBy, address: decision.address, network: decision.network };
    }
    default:
      return refusalAnswer(wording, decision);
  }
}

/** The scope asked about, the closed scopes that decide it, and how a sentence names them. */
interface Wording {
  readonly target: string;
  readonly governing: readonly string[];
  /** The governing scopes as a phrase ("a and b"). */
  readonly by: string;
  /** " (governed by …)" when the scope asked about is not the one that decides, else empty. */
  readonly via: string;
}

type Grant = Extract<Decision, { outcome: 'granted' | 'granted-identity' }>;
type Refusal = Extract<Decision, { outcome: 'no-token' | 'invalid-token' | 'insufficient-scope' }>;

function grantAnswer({ target, governing }: Wording, decision: Grant): AccessAnswer {
  const grantedBy = scopeKey(decision.scope);
  if (decision.outcome === 'granted') {
    const id = `${decision.tokenId}${decision.imported ? ' (imported)' : ''}`;
    const reason = grantedBy === target ? `token ${id} is a valid token of ${target}` : `token ${id} is a valid token of ${grantedBy}, which governs ${target}`;
    return { granted: true, outcome: 'granted', reason, governing, tokenId: decision.tokenId, grantedBy };
  }
  const who = decision.group !== undefined ? `user ${decision.user}, as a member of group ${decision.group},` : `user ${decision.user}`;
  const reason = grantedBy === target ? `${who} is a subject of ${target}` : `${who} is a subject of ${grantedBy}, which governs ${target}`;
  return { granted: true, outcome: 'granted-identity', reason, governing, grantedBy, user: decision.user, ...(decision.group !== undefined ? { group: decision.group } : {}) };
}

function refusalAnswer({ target, governing, by, via }: Wording, decision: Refusal): AccessAnswer {
  switch (decision.outcome) {
    case 'no-token':
      return { granted: false, outcome: 'no-token', reason: `${target} is closed${via} and no token was given`, governing };
    case 'invalid-token':
      if (decision.why === 'expired') {
        return { granted: false, outcome: 'invalid-token', reason: `token ${decision.tokenId} of ${by} has expired`, governing, ...(decision.tokenId ? { tokenId: decision.tokenId } : {}) };
      }
      if (decision.why === 'jwt') return { granted: false, outcome: 'invalid-token', reason: `the JWT did not verify; ${target} is closed${via}`, governing };
      if (decision.why === 'malformed') {
        return { granted: false, outcome: 'invalid-token', reason: `the token is malformed (not printable ASCII, too long, or an svc_ token whose checksum does not match); ${target} is closed${via}`, governing };
      }
      return { granted: false, outcome: 'invalid-token', reason: `the token is not a token of any scope; ${target} is closed${via}`, governing };
    case 'insufficient-scope':
      if (decision.user !== undefined) {
        return { granted: false, outcome: 'insufficient-scope', reason: `user ${decision.user} (with the groups given) is not a subject of ${by}; ${target} is closed${via}`, governing, user: decision.user };
      }
      return {
        granted: false,
        outcome: 'insufficient-scope',
        reason: `token ${decision.tokenId ?? '?'} belongs to another scope; ${target} is closed${via} and only ${governing.length === 1 ? 'its' : 'their'} tokens grant access`,
        governing,
        ...(decision.tokenId !== undefined ? { tokenId: decision.tokenId } : {}),
      };
  }
}

/** The checks made before the store is opened: one credential (or only an address), valid names, a valid address. */
function checkArguments(ctx: CommandContext, tokenArg: string | undefined, options: HasAccessOptions): void {
  const groups = options.group ?? [];
  if (tokenArg !== undefined && options.user !== undefined) {
    throw usageError(`${ctx.commandPath}: give either a token or --user USER (with --group GROUP for each of the user's groups)`);
  }
  if (tokenArg === undefined && options.user === undefined && options.from === undefined) {
    throw usageError(`${ctx.commandPath}: give either a token or --user USER (with --group GROUP for each of the user's groups), or --from ADDRESS`);
  }
  if (options.user === undefined && groups.length > 0) throw usageError(`${ctx.commandPath}: --group goes with --user`);
  for (const [kind, name] of [['User', options.user], ...groups.map((g) => ['Group', g] as const)] as const) {
    const checked = name === undefined ? undefined : checkSubject(kind, name);
    if (checked && !checked.ok) throw usageError(`${ctx.commandPath}: ${JSON.stringify(name)}: ${checked.error}`);
  }
  if (options.from !== undefined && parseAddressInto(options.from, new Uint32Array(4)) === 0) {
    throw usageError(`--from: ${JSON.stringify(options.from.slice(0, 64))} is not an IP address (IPv4 or IPv6 as a proxy sees it: no port, no brackets, no zone)`);
  }
}

/**
 * An address's answer, as svc-auth's decision will give it: granted when a network of a scope that governs the
 * scope's data holds the address (the most specific network of the first such scope); undefined when none does (the
 * request falls through to its token or identity) or nothing governs (open).
 */
export function networkGrant(index: AccessIndex, scope: Scope, address: string, config: ScopeConfig): { answer?: AccessAnswer; anonymous: Decision } {
  const anonymous = decideForScopeAnonymous(index, scope, config);
  const words = new Uint32Array(4);
  const family = parseAddressInto(address, words);
  if (family === 0 || !('governing' in anonymous)) return { anonymous };
  for (const g of anonymous.governing) {
    const network: Network | undefined = entryOf(index, g)?.networks?.find(family, words);
    if (network === undefined) continue;
    const target = scopeKey(scope);
    const by = scopeKey(g);
    const reason = `address ${address} is in network ${network.cidr} of ${by}${by === target ? '' : `, which governs ${target}`}`;
    const governing = anonymous.governing.map(scopeKey);
    return { anonymous, answer: { granted: true, outcome: 'granted-network', reason, governing, grantedBy: by, address, network: network.cidr } };
  }
  return { anonymous };
}

/** The decision for the scope's data with the token or identity given, or (with only an address) with none. */
function credentialDecision(ctx: CommandContext, index: AccessIndex, scope: Scope, token: string | undefined, options: HasAccessOptions, anonymous: Decision | undefined): Decision {
  if (token !== undefined) {
    // Imported (wis2box-auth) tokens are PBKDF2 hashes the SHA-256 lookup cannot find: checked apart.
    return decideImportedSync(index, decideForScope(index, scope, token, ctx.io.now(), scopeConfigOf(ctx)), token, ctx.io.now());
  }
  if (options.user !== undefined) return decideForScopeAs(index, scope, { issuer: '', user: options.user, groups: options.group ?? [] }, ctx.io.now(), scopeConfigOf(ctx));
  return anonymous ?? decideForScopeAnonymous(index, scope, scopeConfigOf(ctx));
}

/** The answer svc-auth would give for the scope's own data: the same snapshot compiler and decision. */
export async function hasAccess(ctx: CommandContext, tokenArg: string | undefined, options: HasAccessOptions): Promise<number> {
  const scope = scopeFromFlags(options, ctx);
  checkArguments(ctx, tokenArg, options);
  const token = tokenArg === undefined ? undefined : await tokenArgument(tokenArg, ctx.io);
  const store = await ctx.openStore();
  const objects = (await store.list()).map((s) => s.object);
  const snapshot = compileSnapshot(objects, ctx.prefixes);
  const index = buildIndex(snapshot.generation, snapshot.lines);
  if (!index.ok) throw failure(`cannot compile the scopes of ${store.where}: ${index.error}`);
  const byAddress = options.from !== undefined ? networkGrant(index.value, scope, options.from, scopeConfigOf(ctx)) : undefined;
  let answer = byAddress?.answer;
  if (answer === undefined) {
    answer = explain(scope, credentialDecision(ctx, index.value, scope, token, options, byAddress?.anonymous), followUp(ctx, 'add-token'));
    // An address no network holds falls through to the credential: the answer says so when a scope governs.
    if (options.from !== undefined && answer.governing.length > 0) answer = { ...answer, reason: `address ${options.from} is in no network of ${answer.governing.join(' or ')}; ${answer.reason}`, address: options.from };
  }
  if (options.output === 'text') {
    ctx.io.out(`${answer.granted ? 'granted' : 'denied'}: ${answer.reason}\n`);
  } else {
    ctx.io.out(structured(options.output, { scope: scopeJson(scope), ...answer }));
  }
  return answer.granted ? 0 : 1;
}

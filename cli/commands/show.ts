// `svc auth show`: every scope as svc-auth enforces it (merged over its objects), never a token.
import {
  buildIndex, closedByFlag, compareScopes, compareStrings, compileSnapshot, DEFAULT_CONFIG, describeState, enforcedState, everyAddressNote, everyAddressWords, isExpired, isImportedHash,
  isPrefixPath, mergeSubjects, networkLimitNote, networksOf, publicByFlag, publicRefusal, refusedPathForm, scopeKey, scopeOf, stateLabel, subjectsOf, tokensOf,
  type AccessIndex, type ClosedBy, type EveryAddress, type OpenOrClosed, type Scope, type ScopeConfig, type ScopeKind, type ScopeState, type Subject, type TokenRecord,
} from '../../core/index.js';
import { failure, usageError } from '../errors.js';
import type { StoredScope } from '../backends/backend.js';
import { structured, table } from '../output.js';
import { scopeConfigOf, scopeFromFlags, type CommandContext, type ScopeFlags } from './common.js';

interface ShowOptions extends ScopeFlags {
  readonly output: 'table' | 'text' | 'json' | 'yaml' | 'wcmp2';
}

interface TokenSummary {
  readonly id: string;
  readonly description?: string;
  readonly createdAt: string;
  readonly expiresAt?: string;
  readonly expired: boolean;
  /** The objects listing this token (more than one when hand-written objects repeat it). */
  readonly objects: readonly string[];
  /** Imported from wis2box-auth (a PBKDF2 hash): works, costs more on first use; replace it when you can. */
  readonly imported?: true;
}

interface NetworkSummary {
  readonly cidr: string;
  /** The first description an object gives it. */
  readonly description?: string;
  /** The objects listing this network. */
  readonly objects: readonly string[];
}

/**
 * An object svc-operator reports as stalled: its spec can never compile as it stands (the Stalled condition of its
 * status, for its current generation; docs/gitops.md). Only a store that keeps statuses (a cluster) has any.
 */
interface StalledObject {
  readonly object: string;
  readonly reason: string;
  readonly message: string;
}

interface ScopeSummary {
  readonly kind: ScopeKind;
  readonly value: string;
  /** As svc-auth enforces it (core's enforcedState). */
  readonly state: OpenOrClosed;
  /** Why it is closed (core's ClosedBy, which whyClosed words); `governing`: the scopes covering a public one. */
  readonly closedBy?: ClosedBy;
  readonly governing?: readonly string[];
  /** Why svc-auth does not read the path as written (a refused form, or public where public is refused). */
  readonly refused?: string;
  /** Whether an object of the scope says `closed: true`. */
  readonly closedFlag: boolean;
  readonly tokenCount: number;
  readonly activeTokenCount: number;
  readonly objects: readonly string[];
  readonly tokens: readonly TokenSummary[];
  /** Identities granted (users, then groups), merged over the scope's objects. */
  readonly subjects: readonly Subject[];
  /** Networks granted by client address, merged over the scope's objects, in canonical text order. */
  readonly networks: readonly NetworkSummary[];
  /** Declared public (`public: true`) and not closed by anything: every method open. */
  readonly public?: true;
  /** Open because a granted network holds every address (`every address`) or every address of a family. */
  readonly openTo?: string;
  /** Closed, but granting networks wider than one organisation's (core's WIDEST_PREFIX). */
  readonly wideNetworks?: readonly string[];
  /**
   * Not (yet) enforced, on a store an operator compiles (Kubernetes): `not enforced`, no svc-operator has observed any
   * of its objects; `pending`, one has not compiled the latest change of some. Absent: compiled, or a directory.
   */
  readonly enforcement?: 'not enforced' | 'pending';
  /** Objects of the scope that svc-operator reports as stalled, with its reason and message. */
  readonly stalled?: readonly StalledObject[];
}

/**
 * One summary per scope, merging every object that holds it (the CLI's own and hand-written ones) the way
 * the snapshot compiler does: a token listed twice counts once and keeps its latest expiry (none beats any).
 * Never a token value or hash: ids, descriptions and times only.
 */
export function summarize(stored: readonly StoredScope[], nowMs: number, only?: Scope, config: ScopeConfig = DEFAULT_CONFIG): ScopeSummary[] {
  const openPathsByDefault = config.openPathsByDefault === true;
  const groups = new Map<string, ScopeGroup>();
  if (only) groups.set(scopeKey(only), newGroup(only));
  // The stations collection is listed even without an object while its writes are closed by default.
  const stations: Scope = { kind: 'path', value: 'collections/stations' };
  if (!only && !openPathsByDefault) groups.set(scopeKey(stations), newGroup(stations));
  const index = indexOf(stored, config);
  for (const { object, compiled } of stored) {
    const scope = scopeOf(object.spec);
    const key = scopeKey(scope);
    if (only && key !== scopeKey(only)) continue;
    let group = groups.get(key);
    if (!group) groups.set(key, (group = newGroup(scope)));
    addObject(group, object);
    if (compiled !== undefined) group.compiled.push(compiled);
  }
  return [...groups.values()].map((g) => summaryOf(g, nowMs, index, config)).sort((a, b) => compareScopes(a, b));
}

/**
 * The decision index of every stored object, when a path scope's state may depend on other scopes (a public one,
 * or one in a refused form); undefined otherwise, and when the objects do not compile (their states then read as
 * the objects say).
 */
function indexOf(stored: readonly StoredScope[], config: ScopeConfig): AccessIndex | undefined {
  const objects = stored.map((s) => s.object);
  if (!objects.some((o) => o.spec.path !== undefined && (publicByFlag(o) || refusedPathForm(o.spec.path, config) !== undefined))) return undefined;
  const snapshot = compileSnapshot(objects, config);
  const index = buildIndex(snapshot.generation, snapshot.lines);
  return index.ok ? index.value : undefined;
}

/** The objects of one scope, merged as the snapshot compiler merges them. */
interface ScopeGroup {
  readonly scope: Scope;
  readonly objects: string[];
  closed: boolean;
  public?: boolean;
  /** By hash: a token listed in several objects is one token. */
  readonly tokens: Map<string, { t: TokenSummary; objects: string[] }>;
  readonly subjects: Subject[][];
  /** By canonical text: a network listed in several objects is one network. */
  readonly networks: Map<string, { description?: string; objects: string[] }>;
  /** Whether an operator compiled each object (a store with an operator only). */
  readonly compiled: NonNullable<StoredScope['compiled']>[];
  /** Objects svc-operator reports as stalled (a store that keeps statuses only). */
  readonly stalled: StalledObject[];
}

function newGroup(scope: Scope): ScopeGroup {
  return { scope, objects: [], closed: false, tokens: new Map(), subjects: [], networks: new Map(), compiled: [], stalled: [] };
}

/** The object's Stalled condition when it is True for the object's current generation. */
function stalledOf(object: StoredScope['object']): StalledObject | undefined {
  const c = object.status?.conditions?.find((x) => x.type === 'Stalled');
  if (c?.status !== 'True' || (c.observedGeneration !== undefined && c.observedGeneration !== object.metadata.generation)) return undefined;
  return { object: object.metadata.name, reason: c.reason, message: c.message };
}

/** `not enforced` when no object of the scope was ever compiled, `pending` when one is behind, else undefined. */
function enforcementOf(group: ScopeGroup): ScopeSummary['enforcement'] {
  if (group.compiled.length === 0) return undefined;
  if (group.compiled.every((c) => c === 'unseen')) return 'not enforced';
  return group.compiled.some((c) => c !== 'compiled') ? 'pending' : undefined;
}

function addObject(group: ScopeGroup, object: StoredScope['object']): void {
  const name = object.metadata.name;
  group.objects.push(name);
  const stalled = stalledOf(object);
  if (stalled) group.stalled.push(stalled);
  group.subjects.push([...subjectsOf(object)]);
  if (closedByFlag(object)) group.closed = true;
  if (publicByFlag(object)) group.public = true;
  for (const n of networksOf(object)) {
    const seen = group.networks.get(n.cidr);
    if (!seen) group.networks.set(n.cidr, { ...(n.description !== undefined ? { description: n.description } : {}), objects: [name] });
    else {
      seen.objects.push(name);
      if (seen.description === undefined && n.description !== undefined) seen.description = n.description;
    }
  }
  for (const t of tokensOf(object)) {
    const seen = group.tokens.get(t.hash);
    if (!seen) {
      group.tokens.set(t.hash, { t: tokenSummaryOf(t), objects: [name] });
      continue;
    }
    seen.objects.push(name);
    seen.t = mergedToken(seen.t, t);
  }
}

function tokenSummaryOf(t: TokenRecord): TokenSummary {
  return {
    id: t.id,
    ...(t.description !== undefined ? { description: t.description } : {}),
    createdAt: t.createdAt,
    ...(t.expiresAt !== undefined ? { expiresAt: t.expiresAt } : {}),
    expired: false,
    objects: [],
    ...(isImportedHash(t.hash) ? { imported: true as const } : {}),
  };
}

/** A token seen again in another object: the first description, the earliest creation, the latest expiry (none beats any). */
function mergedToken(seen: TokenSummary, t: TokenRecord): TokenSummary {
  const expiresAt = seen.expiresAt === undefined || t.expiresAt === undefined ? undefined : Date.parse(t.expiresAt) > Date.parse(seen.expiresAt) ? t.expiresAt : seen.expiresAt;
  const { expiresAt: _old, ...rest } = seen;
  return {
    ...rest,
    ...(seen.description === undefined && t.description !== undefined ? { description: t.description } : {}),
    createdAt: Date.parse(t.createdAt) < Date.parse(seen.createdAt) ? t.createdAt : seen.createdAt,
    ...(expiresAt !== undefined ? { expiresAt } : {}),
  };
}

function summaryOf(group: ScopeGroup, nowMs: number, index: AccessIndex | undefined, config: ScopeConfig): ScopeSummary {
  const tokens = [...group.tokens.values()]
    .map(({ t, objects }) => ({ ...t, expired: isExpired(t, nowMs), objects: [...objects].sort() }))
    .sort((a, b) => compareStrings(a.createdAt, b.createdAt) || compareStrings(a.id, b.id));
  const subjects = mergeSubjects(group.subjects);
  const networks = [...group.networks]
    .sort(([a], [b]) => compareStrings(a, b))
    .map(([cidr, n]): NetworkSummary => ({ cidr, ...(n.description !== undefined ? { description: n.description } : {}), objects: [...n.objects].sort() }));
  const own = { tokens: tokens.length, subjects: subjects.length, networks: networks.length, networkCidrs: networks.map((n) => n.cidr), closedFlag: group.closed, public: group.public === true };
  const s = enforcedState(index, group.scope, own, config);
  const refused = refusalOf(group, config);
  const enforcement = enforcementOf(group);
  return {
    kind: group.scope.kind,
    value: group.scope.value,
    state: s.state,
    ...(s.state === 'Closed' ? { closedBy: s.by, ...(s.governing ? { governing: s.governing } : {}) } : {}),
    ...(refused !== undefined ? { refused } : {}),
    closedFlag: group.closed,
    tokenCount: tokens.length,
    activeTokenCount: tokens.filter((t) => !t.expired).length,
    objects: [...group.objects].sort(),
    tokens,
    subjects,
    networks,
    ...(s.state === 'Open' && s.public ? { public: true as const } : {}),
    ...(s.state === 'Open' && s.everyAddress !== undefined ? { openTo: everyAddressWords(s.everyAddress) } : {}),
    ...(s.state === 'Closed' && s.wide !== undefined ? { wideNetworks: s.wide } : {}),
    ...(enforcement !== undefined ? { enforcement } : {}),
    ...(group.stalled.length > 0 ? { stalled: [...group.stalled].sort((a, b) => compareStrings(a.object, b.object)) } : {}),
  };
}

/** The STATE cell: core's label, and whether an operator enforces it (Kubernetes). */
function stateCell(s: ScopeSummary): string {
  return `${stateLabel(summaryState(s))}${s.enforcement !== undefined ? ` (${s.enforcement})` : ''}`;
}

/** The text view's line saying a scope is not (yet) enforced, and why. */
function enforcementLine(s: ScopeSummary): string[] {
  if (s.enforcement === 'not enforced') return ['  not enforced: no svc-operator has observed its objects (is one serving this namespace?)'];
  if (s.enforcement === 'pending') return ['  pending: svc-operator has not compiled the latest change of all its objects yet'];
  return [];
}

/** Why svc-auth does not read a path scope as its objects write it (core's refusedPathForm, publicRefusal). */
function refusalOf(group: ScopeGroup, config: ScopeConfig): string | undefined {
  if (group.scope.kind !== 'path') return undefined;
  const form = refusedPathForm(group.scope.value, config);
  if (group.public !== true) return form;
  const why = publicRefusal(group.scope.value, config);
  return why === undefined ? undefined : `not public: ${why}`;
}

function expiryCell(t: TokenSummary): string {
  return t.expiresAt === undefined ? 'never' : t.expired ? `${t.expiresAt} (expired)` : t.expiresAt;
}

/** One row per token (the scope's columns on its first row only), one row for a scope without tokens. */
function renderTable(summaries: readonly ScopeSummary[]): string {
  // The SUBJECTS and NETWORKS columns only when a scope grants identities or networks: tables of token-only scopes stay
  // as they were. NETWORKS is a count (a scope may list 256; text and json list them).
  const withSubjects = summaries.some((s) => s.subjects.length > 0);
  const withNetworks = summaries.some((s) => s.networks.length > 0);
  const rows: string[][] = [];
  for (const s of summaries) {
    const head = [
      s.kind, s.value, stateCell(s), String(s.tokenCount), ...(withSubjects ? [s.subjects.map(subjectCell).join(',') || '-'] : []),
      ...(withNetworks ? [String(s.networks.length)] : []),
    ];
    const blank = head.map(() => '');
    if (s.tokens.length === 0) rows.push([...head, '-', '-', '-', '-']);
    s.tokens.forEach((t, i) => rows.push([...(i === 0 ? head : blank), t.imported ? `${t.id} (imported)` : t.id, t.createdAt, expiryCell(t), t.description ?? '-']));
  }
  return table(['KIND', 'SCOPE', 'STATE', 'TOKENS', ...(withSubjects ? ['SUBJECTS'] : []), ...(withNetworks ? ['NETWORKS'] : []), 'ID', 'CREATED', 'EXPIRES', 'DESCRIPTION'], rows);
}

/** `user:alice`, `group:wis2-ops`. */
function subjectCell(x: Subject): string {
  return `${x.kind.toLowerCase()}:${x.name}`;
}

/** A summary's state as core describes it (describeState). */
export function summaryState(s: ScopeSummary): ScopeState {
  if (s.state === 'Open') return s.openTo !== undefined ? { state: 'Open', everyAddress: everyOf(s.openTo) } : s.public ? { state: 'Open', public: true } : { state: 'Open' };
  return { state: 'Closed', by: s.closedBy ?? 'tokens', ...(s.governing ? { governing: s.governing } : {}), ...(s.wideNetworks ? { wide: s.wideNetworks } : {}) };
}

/** everyAddressWords read back. */
function everyOf(words: string): EveryAddress {
  return words === everyAddressWords(4) ? 4 : words === everyAddressWords(6) ? 6 : 'all';
}


/** What svc-operator says of a stalled object, on one line. */
function stalledLine(x: StalledObject): string {
  return `  stalled: ${x.object} (${x.reason}): ${x.message}`;
}

function renderText(summaries: readonly ScopeSummary[]): string {
  const blocks = summaries.map((s) => {
    const head = `${s.kind} ${s.value}: ${describeState(summaryState(s), s.tokenCount, s.subjects.length, s.networks.length)}` +
      (s.tokenCount > 0 ? ` (${s.activeTokenCount} active)` : '') +
      (s.objects.length > 0 ? `; object${s.objects.length === 1 ? '' : 's'} ${s.objects.join(', ')}` : '; no object');
    const lines = [
      ...s.tokens.map((t) => `  ${t.id}  created ${t.createdAt}  expires ${expiryCell(t)}${t.description !== undefined ? `  ${JSON.stringify(t.description)}` : ''}${t.imported ? '  [imported: PBKDF2 hash]' : ''}`),
      ...s.subjects.map((x) => `  ${subjectCell(x)}`),
      ...s.networks.map((n) => `  network ${n.cidr}${n.description !== undefined ? `  ${JSON.stringify(n.description)}` : ''}`),
    ];
    return [head, ...lines, ...(s.refused !== undefined ? [`  refused: ${s.refused}`] : []), ...enforcementLine(s), ...(s.stalled ?? []).map(stalledLine)].join('\n');
  });
  return `${blocks.join('\n')}\n`;
}

export async function show(ctx: CommandContext, options: ShowOptions): Promise<number> {
  const given = options.topicHierarchy !== undefined || options.metadataId !== undefined || options.path !== undefined;
  const only = given ? scopeFromFlags(options, ctx) : undefined;
  const store = await ctx.openStore();
  if (options.output === 'wcmp2' && !only) throw usageError(`-o wcmp2 prints the WCMP2 link security object of one scope: give --topic-hierarchy, --metadata-id or --path (see ${ctx.commandPath} --help)`);
  // A path scope's state may depend on the others (a public one that a grant covers): all of them are read.
  const stored = only && only.kind !== 'path' ? await store.get(only) : await store.list();
  const summaries = summarize(stored, ctx.io.now(), only, scopeConfigOf(ctx));
  switch (options.output) {
    case 'wcmp2': {
      const s = summaries[0]!;
      if (s.public) throw failure(`${s.kind} ${s.value} is public in ${store.where}: its links need no security object`);
      if (s.state === 'Open' && s.openTo === 'every address') throw failure(`${s.kind} ${s.value} is open to every address in ${store.where} (a granted network holds them all): its links need no security object`);
      if (s.state === 'Open' && s.openTo === undefined) throw failure(`${s.kind} ${s.value} is open in ${store.where}: its links need no security object (close it with add-token or close first)`);
      ctx.io.out(`${JSON.stringify({ security: wcmp2Security(only!, s.networks.length > 0, s.openTo !== undefined ? everyOf(s.openTo) : undefined) }, null, 2)}\n`);
      break;
    }
    case 'json':
    case 'yaml':
      ctx.io.out(structured(options.output, { store: store.where, scopes: summaries }));
      break;
    case 'text':
    case 'table':
      if (summaries.length === 0) {
        ctx.io.err(`No protected scopes in ${store.where}: everything is open.\n`);
        break;
      }
      if (!only && !ctx.openPathsByDefault) {
        ctx.io.err('Process execution and stations writes are closed by default: a process runs only with a token of a processes/<prefix> scope covering it.\n');
      }
      ctx.io.out(options.output === 'table' ? renderTable(summaries) : renderText(summaries));
      // The table has no room for them: objects svc-operator cannot compile as written are named beside it.
      if (options.output === 'table') for (const x of summaries.flatMap((s) => s.stalled ?? [])) ctx.io.err(`ProtectedScope ${x.object} is stalled (${x.reason}): ${x.message}\n`);
      break;
  }
  return 0;
}

/**
 * The `security` object of a WCMP2 link to the scope's data (WMO Core Metadata Profile 2, "Links and
 * Distribution Information / Access control": OpenAPI security scheme objects, `default` first), so a
 * publisher can tell discovery users that the data needs a token and how to present it. A WIS2 Notification
 * Message's link takes the same object. Where the scope grants networks, every description first says that
 * download is limited to them (core's networkLimitNote): OpenAPI has no scheme for client addresses.
 */
function wcmp2Security(scope: Scope, networks: boolean, every?: EveryAddress): Record<string, { type: string; scheme?: string; in?: string; name?: string; description: string }> {
  // A prefix path (`wis2downloader`) is a path of the host and everything below it, fetched like files.
  const prefix = scope.kind === 'path' && isPrefixPath(scope.value);
  const what = scope.kind === 'topic' ? `data under the topic ${scope.value}` : scope.kind === 'dataset' ? `the dataset ${scope.value}` : prefix ? `/${scope.value} and everything below it` : `${scope.value}`;
  const limit = every !== undefined ? everyAddressNote(what, every) : networks ? networkLimitNote(what) : '';
  const contact = `${limit ? `${limit} ` : ''}Please contact the data provider for a token.`;
  return {
    default: { type: 'http', scheme: 'bearer', description: `Access to ${what} is controlled: send the token as "Authorization: Bearer <token>". ${contact}` },
    query: { type: 'apiKey', in: 'query', name: 'token', description: `The token may also be given as the query argument ?token=<token> (for wget and curl). ${contact}` },
    ...(scope.kind === 'path' && !prefix
      ? {}
      : { basic: { type: 'http', scheme: 'basic', description: `For files ${prefix ? `under /${scope.value}` : 'of the web-accessible folder'}, the token is also accepted as the password of HTTP Basic authentication (any user name). ${contact}` } }),
  };
}

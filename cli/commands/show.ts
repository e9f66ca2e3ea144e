import { compareScopes, compareStrings, isExpired, scopeKey, scopeOf, tokensOf, type Scope, type ScopeKind } from '../../core/index.js';
import type { StoredScope } from '../backends/backend.js';
import { structured, table } from '../output.js';
import { scopeFromFlags, type CommandContext, type ScopeFlags } from './common.js';

export interface ShowOptions extends ScopeFlags {
  readonly output: 'table' | 'text' | 'json' | 'yaml';
}

export interface TokenSummary {
  readonly id: string;
  readonly description?: string;
  readonly createdAt: string;
  readonly expiresAt?: string;
  readonly expired: boolean;
  /** The objects listing this token (more than one when hand-written objects repeat it). */
  readonly objects: readonly string[];
}

export interface ScopeSummary {
  readonly kind: ScopeKind;
  readonly value: string;
  /** Closed while any token record exists, expired ones included (expiry never silently opens data). */
  readonly state: 'Open' | 'Closed';
  readonly tokenCount: number;
  readonly activeTokenCount: number;
  readonly objects: readonly string[];
  readonly tokens: readonly TokenSummary[];
}

/**
 * One summary per scope, merging every object that holds it (the CLI's own and hand-written ones) the way
 * the snapshot compiler does: a token listed twice counts once and keeps its latest expiry (none beats any).
 * Never a token value or hash: ids, descriptions and times only.
 */
export function summarize(stored: readonly StoredScope[], nowMs: number, only?: Scope): ScopeSummary[] {
  const groups = new Map<string, { scope: Scope; objects: string[]; tokens: Map<string, { t: TokenSummary; objects: string[] }> }>();
  if (only) groups.set(scopeKey(only), { scope: only, objects: [], tokens: new Map() });
  for (const { object } of stored) {
    const scope = scopeOf(object.spec);
    const key = scopeKey(scope);
    if (only && key !== scopeKey(only)) continue;
    let group = groups.get(key);
    if (!group) groups.set(key, (group = { scope, objects: [], tokens: new Map() }));
    group.objects.push(object.metadata.name);
    for (const t of tokensOf(object)) {
      const seen = group.tokens.get(t.hash);
      if (!seen) {
        group.tokens.set(t.hash, {
          t: {
            id: t.id,
            ...(t.description !== undefined ? { description: t.description } : {}),
            createdAt: t.createdAt,
            ...(t.expiresAt !== undefined ? { expiresAt: t.expiresAt } : {}),
            expired: false,
            objects: [],
          },
          objects: [object.metadata.name],
        });
        continue;
      }
      seen.objects.push(object.metadata.name);
      const expiresAt = seen.t.expiresAt === undefined || t.expiresAt === undefined ? undefined : Date.parse(t.expiresAt) > Date.parse(seen.t.expiresAt) ? t.expiresAt : seen.t.expiresAt;
      const { expiresAt: _old, ...rest } = seen.t;
      seen.t = {
        ...rest,
        ...(seen.t.description === undefined && t.description !== undefined ? { description: t.description } : {}),
        createdAt: Date.parse(t.createdAt) < Date.parse(seen.t.createdAt) ? t.createdAt : seen.t.createdAt,
        ...(expiresAt !== undefined ? { expiresAt } : {}),
      };
    }
  }
  const out: ScopeSummary[] = [];
  for (const group of groups.values()) {
    const tokens = [...group.tokens.values()]
      .map(({ t, objects }) => ({ ...t, expired: isExpired(t, nowMs), objects: [...objects].sort() }))
      .sort((a, b) => compareStrings(a.createdAt, b.createdAt) || compareStrings(a.id, b.id));
    out.push({
      kind: group.scope.kind,
      value: group.scope.value,
      state: tokens.length > 0 ? 'Closed' : 'Open',
      tokenCount: tokens.length,
      activeTokenCount: tokens.filter((t) => !t.expired).length,
      objects: [...group.objects].sort(),
      tokens,
    });
  }
  return out.sort((a, b) => compareScopes(a, b));
}

function expiryCell(t: TokenSummary): string {
  return t.expiresAt === undefined ? 'never' : t.expired ? `${t.expiresAt} (expired)` : t.expiresAt;
}

/** One row per token (the scope's columns on its first row only), one row for a scope without tokens. */
export function renderTable(summaries: readonly ScopeSummary[]): string {
  const rows: string[][] = [];
  for (const s of summaries) {
    const head = [s.kind, s.value, s.state, String(s.tokenCount)];
    if (s.tokens.length === 0) rows.push([...head, '-', '-', '-', '-']);
    s.tokens.forEach((t, i) => rows.push([...(i === 0 ? head : ['', '', '', '']), t.id, t.createdAt, expiryCell(t), t.description ?? '-']));
  }
  return table(['KIND', 'SCOPE', 'STATE', 'TOKENS', 'ID', 'CREATED', 'EXPIRES', 'DESCRIPTION'], rows);
}

export function renderText(summaries: readonly ScopeSummary[]): string {
  const blocks = summaries.map((s) => {
    const head = `${s.kind} ${s.value}: ${s.state.toLowerCase()}, ${s.tokenCount} token${s.tokenCount === 1 ? '' : 's'}` +
      (s.tokenCount > 0 ? ` (${s.activeTokenCount} active)` : '') +
      (s.objects.length > 0 ? `; object${s.objects.length === 1 ? '' : 's'} ${s.objects.join(', ')}` : '; no object');
    const lines = s.tokens.map(
      (t) => `  ${t.id}  created ${t.createdAt}  expires ${expiryCell(t)}${t.description !== undefined ? `  ${JSON.stringify(t.description)}` : ''}`,
    );
    return [head, ...lines].join('\n');
  });
  return `${blocks.join('\n')}\n`;
}

export async function show(ctx: CommandContext, options: ShowOptions): Promise<number> {
  const given = options.topicHierarchy !== undefined || options.metadataId !== undefined || options.path !== undefined;
  const only = given ? scopeFromFlags(options, ctx.commandPath) : undefined;
  const store = await ctx.openStore();
  const stored = only ? await store.get(only) : await store.list();
  const summaries = summarize(stored, ctx.io.now(), only);
  switch (options.output) {
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
      ctx.io.out(options.output === 'table' ? renderTable(summaries) : renderText(summaries));
      break;
  }
  return 0;
}

/**
 * `GET /authz/v1/protected`: what a metadata publisher (or a client) may know of the access control, and
 * nothing more: every closed scope's kind and value, and how credentials are presented (and, for a scope with
 * networks, that download is limited to them, or open to every address of a family a granted network holds whole: a
 * scope open to every address is listed apart, under `openToEveryAddress`, never as access-controlled). Never a token id, hash, count, network or description, nor the snapshot generation, which moves with every token added or revoked: the
 * body, and so its ETag, change only when what it lists changes. Rendered once per index in service (and per
 * configuration), so a harvester polling it costs a string comparison.
 */
import { createHash } from 'node:crypto';
import {
  decideForScopeAnonymous, everyAddressNote, isPrefixPath, jobsPath, networkLimitNote, networkReach, type AccessConfig, type AccessIndex, type EveryAddress, type IndexedScope, type Scope,
  type TopicNode,
} from '../../core/index.js';

export interface ProtectedList {
  readonly body: string;
  readonly etag: string;
}

function* closedScopes(index: AccessIndex): Generator<IndexedScope> {
  const walk = function* (nodes: ReadonlyMap<string, TopicNode>): Generator<IndexedScope> {
    for (const node of nodes.values()) {
      if (node.scope) yield node.scope;
      yield* walk(node.children);
    }
  };
  yield* walk(index.topics);
  yield* index.datasets.values();
  // Public path scopes are in the index (they open what paths closed by default would close): not closed.
  for (const s of index.paths.values()) if (!s.public) yield s;
}

/**
 * Public path scopes (read-only processes called without a token), listed apart: open for every method. Only those
 * svc-auth opens: a public scope that another scope's grant covers stays closed (decideForScopeAnonymous).
 */
function publicScopes(index: AccessIndex, config: AccessConfig): { kind: 'path'; value: string }[] {
  return [...index.paths.values()]
    .filter((s) => s.public && decideForScopeAnonymous(index, s.scope, config).outcome === 'open')
    .map((s) => ({ kind: 'path' as const, value: s.scope.value }))
    .sort((a, b) => (a.value < b.value ? -1 : 1));
}

/** What a scope's data is called in a description, as `svc auth show -o wcmp2` names it. */
function dataOf(scope: Scope): string {
  if (scope.kind === 'topic') return `data under the topic ${scope.value}`;
  if (scope.kind === 'dataset') return `the dataset ${scope.value}`;
  return isPrefixPath(scope.value) ? `/${scope.value} and everything below it` : scope.value;
}

/** Which addresses a scope's networks hold whole (a network of prefix 0 granted: core's networkReach), if any. */
function everyAddressOf(s: IndexedScope): EveryAddress | undefined {
  return s.networks === undefined ? undefined : networkReach(s.networks.networks.map((n) => n.cidr)).every;
}

/**
 * A listed scope: its kind and value, and where it grants networks, that download is limited to them, or open to
 * every address of a family a granted network holds whole (never the networks themselves, nor how many).
 */
function listed(s: IndexedScope): { kind: Scope['kind']; value: string; description?: string } {
  const every = everyAddressOf(s);
  const description = every !== undefined ? everyAddressNote(dataOf(s.scope), every) : s.networks !== undefined ? networkLimitNote(dataOf(s.scope)) : undefined;
  return { kind: s.scope.kind, value: s.scope.value, ...(description !== undefined ? { description } : {}) };
}

const byKindAndValue = (a: { kind: string; value: string }, b: { kind: string; value: string }) => (a.kind === b.kind ? (a.value < b.value ? -1 : 1) : a.kind < b.kind ? -1 : 1);

export function renderProtectedList(index: AccessIndex, config: AccessConfig): ProtectedList {
  const waf = `/${config.wafPrefix.join('/')}`;
  const api = `/${config.apiPrefix.join('/')}`;
  // A scope whose networks hold every address (both families) controls nothing: listed apart, never as controlled.
  const all = [...closedScopes(index)];
  const scopes = all.filter((s) => everyAddressOf(s) !== 'all').map(listed).sort(byKindAndValue);
  const everyAddress = all.filter((s) => everyAddressOf(s) === 'all').map(listed).sort(byKindAndValue);
  const open = publicScopes(index, config);
  const body = JSON.stringify({
    // OpenAPI security scheme objects, as WCMP2 links carry them (`security`).
    credentials: [
      { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <token>' },
      ...(config.tokenParam !== null ? [{ type: 'apiKey', in: 'query', name: config.tokenParam, description: `?${config.tokenParam}=<token>` }] : []),
      { type: 'http', scheme: 'basic', description: `the token as the password (any user name), for files under ${waf}/` },
    ],
    scopes,
    // Only when there are some, so a body without public scopes keeps its bytes (and ETag).
    ...(open.length > 0 ? { public: open } : {}),
    ...(everyAddress.length > 0 ? { openToEveryAddress: everyAddress } : {}),
    closedByDefault: config.openPathsByDefault
      ? []
      : [
          { kind: 'path', value: 'collections/stations', description: `writes (POST, PUT, PATCH, DELETE) to ${api}/collections/stations need a token of that scope` },
          { kind: 'path', value: 'processes', description: `executing a process (${api}/processes/<id>) needs a token of a processes/<prefix> scope covering it` },
          { kind: 'path', value: jobsPath(config), description: `unsafe requests (DELETE, POST, ...) to ${api}/jobs and below, such as dismissing a job, need a token of that scope` },
        ],
  });
  return { body, etag: `"${createHash('sha256').update(body).digest('hex').slice(0, 32)}"` };
}

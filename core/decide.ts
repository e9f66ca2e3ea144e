import type { AccessIndex, IndexedScope, TopicNode } from './access-index.js';
import { extractCredential, type Credential, type TokenSource } from './credentials.js';
import { normalizeTarget } from './normalize.js';
import type { Scope } from './scope.js';
import { hashTokenHex, isPlausibleToken, tokenIdOfHex } from './token.js';

/**
 * The access decision of ACCESS-RULES.md, as a pure function of the index, the configuration, the
 * request and the clock. svc-auth maps decisions to HTTP answers; the CLI's has-access-topic uses
 * decideForScope, so both give the same answer.
 */
export type Area = 'waf' | 'api' | 'other';

export interface AccessConfig {
  /** Path prefixes as segments: `/data` → ['data']. */
  readonly wafPrefix: readonly string[];
  readonly apiPrefix: readonly string[];
  /** The query argument that carries a token; null disables query tokens. */
  readonly tokenParam: string | null;
}

export interface AccessRequest {
  readonly method: string;
  /** The original request target: a path with optional query, as the proxy sent it. */
  readonly target: string;
  readonly authorization: string | undefined;
}

interface Governed {
  readonly area: Area;
  readonly governing: readonly Scope[];
}

export type Decision =
  | { readonly outcome: 'open'; readonly area: Area }
  | { readonly outcome: 'malformed'; readonly reason: string }
  | (Governed & {
      readonly outcome: 'granted';
      readonly scope: Scope;
      readonly tokenId: string;
      readonly source: TokenSource;
      /** When the deciding token expires (ms since epoch; Infinity when never): bounds how long a proxy may cache the allow. */
      readonly expiresAt: number;
    })
  | (Governed & { readonly outcome: 'no-token' })
  | (Governed & { readonly outcome: 'invalid-token'; readonly why: 'malformed' | 'unknown' | 'expired'; readonly tokenId?: string })
  | (Governed & { readonly outcome: 'insufficient-scope'; readonly tokenId: string });

export type Outcome = Decision['outcome'];

export const DEFAULT_CONFIG: AccessConfig = { wafPrefix: ['data'], apiPrefix: ['oapi'], tokenParam: 'token' };

/** `/data/` → ['data']; the root prefix `/` is refused because it would make every path WAF and API at once. */
export function parsePrefix(prefix: string): readonly string[] {
  const segments = prefix.split('/').filter((s) => s.length > 0);
  if (segments.length === 0 || segments.some((s) => s === '.' || s === '..' || /[%;\\?#\s]/.test(s))) {
    throw new RangeError(`invalid path prefix ${JSON.stringify(prefix)}: use a path such as /data`);
  }
  return segments;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function decide(index: AccessIndex, config: AccessConfig, req: AccessRequest, nowMs: number): Decision {
  const target = normalizeTarget(req.target);
  if (!target.ok) return { outcome: 'malformed', reason: target.reason };
  const { area, scopes } = governingFor(index, config, req.method, target.segments);
  if (scopes.length === 0) return { outcome: 'open', area };
  return judge(index, area, scopes, extractCredential(target.query, req.authorization, config.tokenParam), nowMs);
}

/** What the CLI's has-access-topic answers: the decision for a request to the scope's own data. */
export function decideForScope(index: AccessIndex, scope: Scope, token: string, nowMs: number): Decision {
  const found = new Candidates();
  if (scope.kind === 'topic') found.topicRuns(index, scope.value.split('.'));
  else if (scope.kind === 'dataset') found.datasetPrefixes(index, scope.value);
  else if (scope.value.startsWith('processes/')) found.processPrefixes(index, scope.value.slice('processes/'.length));
  else found.add(index.paths.get(scope.value));
  const area: Area = scope.kind === 'path' ? 'api' : 'other';
  const scopes = found.mostSpecific();
  if (scopes.length === 0) return { outcome: 'open', area };
  return judge(index, area, scopes, { kind: 'token', token, source: 'bearer' }, nowMs);
}

/** Step 3 and the answers table: only the governing scopes' tokens grant. */
function judge(index: AccessIndex, area: Area, scopes: readonly IndexedScope[], credential: Credential, nowMs: number): Decision {
  const governing = scopes.map((s) => s.scope);
  if (credential.kind === 'none') return { outcome: 'no-token', area, governing };
  if (credential.kind === 'malformed' || !isPlausibleToken(credential.token)) {
    return { outcome: 'invalid-token', area, governing, why: 'malformed' };
  }
  const hex = hashTokenHex(credential.token);
  const tokenId = tokenIdOfHex(hex);
  let expired = false;
  for (const entry of scopes) {
    const expiresAt = entry.tokens.get(hex);
    if (expiresAt === undefined) continue;
    if (expiresAt > nowMs) return { outcome: 'granted', area, governing, scope: entry.scope, tokenId, source: credential.source, expiresAt };
    expired = true;
  }
  if (expired) return { outcome: 'invalid-token', area, governing, why: 'expired', tokenId };
  const elsewhere = index.allTokens.get(hex);
  if (elsewhere !== undefined && elsewhere > nowMs) return { outcome: 'insufficient-scope', area, governing, tokenId };
  return { outcome: 'invalid-token', area, governing, why: 'unknown' };
}

function startsWith(segments: readonly string[], prefix: readonly string[]): boolean {
  if (segments.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (segments[i] !== prefix[i]) return false;
  return true;
}

/** Finds the closed candidate scopes of a normalized request (ACCESS-RULES.md step 2). */
function governingFor(index: AccessIndex, config: AccessConfig, method: string, segments: readonly string[]): { area: Area; scopes: readonly IndexedScope[] } {
  const found = new Candidates();
  let area: Area = 'other';
  if (startsWith(segments, config.wafPrefix)) {
    area = 'waf';
    const rest = segments.slice(config.wafPrefix.length);
    if (rest[0] !== 'metadata') {
      found.topicRuns(index, rest);
      for (const seg of rest) found.datasetPrefixes(index, seg);
    }
  } else if (startsWith(segments, config.apiPrefix)) {
    area = 'api';
    const [resource, id] = segments.slice(config.apiPrefix.length);
    const safe = SAFE_METHODS.has(method);
    if (resource === 'collections' && id !== undefined) {
      if (id === 'stations') {
        if (!safe) found.add(index.paths.get('collections/stations'));
      } else if (!(id === 'discovery-metadata' && safe)) {
        found.topicRuns(index, id.split('.'));
        found.datasetPrefixes(index, id);
      }
    } else if (resource === 'processes' && id !== undefined && method !== 'OPTIONS') {
      found.processPrefixes(index, id);
    }
  }
  return { area, scopes: found.mostSpecific() };
}

/**
 * Collects closed candidates; allocation only starts with the first hit, so open requests (the common
 * case) cost a few map lookups.
 */
class Candidates {
  private hits: IndexedScope[] | undefined;

  add(entry: IndexedScope | undefined): void {
    if (entry) (this.hits ??= []).push(entry);
  }

  /** Topic scopes whose levels appear as consecutive items of `levels`, starting anywhere. */
  topicRuns(index: AccessIndex, levels: readonly string[]): void {
    if (index.topics.size === 0) return;
    for (let start = 0; start < levels.length; start++) {
      let node: TopicNode | undefined = index.topics.get(levels[start]!);
      for (let i = start + 1; node; i++) {
        this.add(node.scope);
        if (i >= levels.length) break;
        node = node.children.get(levels[i]!);
      }
    }
  }

  /** Dataset scopes equal to the id or a prefix of it at a `:` boundary. */
  datasetPrefixes(index: AccessIndex, id: string): void {
    if (index.datasets.size === 0 || !id.startsWith('urn:')) return;
    for (let colon = id.indexOf(':', 4); colon > 0; colon = id.indexOf(':', colon + 1)) {
      this.add(index.datasets.get(id.slice(0, colon)));
    }
    this.add(index.datasets.get(id));
  }

  /** Path scopes processes/<p> where the process id equals p or starts with `p-`. */
  processPrefixes(index: AccessIndex, processId: string): void {
    if (index.paths.size === 0) return;
    for (let dash = processId.indexOf('-'); dash > 0; dash = processId.indexOf('-', dash + 1)) {
      this.add(index.paths.get(`processes/${processId.slice(0, dash)}`));
    }
    this.add(index.paths.get(`processes/${processId}`));
  }

  /** The deepest closed candidates of each kind; candidates of different kinds govern together. */
  mostSpecific(): IndexedScope[] {
    const hits = this.hits;
    if (!hits) return [];
    const deepest = new Map<string, number>();
    for (const h of hits) deepest.set(h.scope.kind, Math.max(deepest.get(h.scope.kind) ?? 0, h.depth));
    const unique = new Set(hits.filter((h) => h.depth === deepest.get(h.scope.kind)));
    return [...unique];
  }
}

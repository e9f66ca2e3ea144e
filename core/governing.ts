/**
 * What governs a request (docs/access-rules.md "From a request to a decision", steps 2 to 5): the closed candidate
 * scopes of a normalized request, the most specific of each kind, public ones never governing, and the closed-by-
 * default stand-ins for writes no scope covers; and a network of a governing scope that holds the client address.
 * Pure and allocation-light: open requests, the common case, cost a few map lookups.
 */
import type { AccessIndex, IndexedScope, TopicNode } from './access-index.js';
import type { AccessConfig, Area, ClosedByDefault, Decision, GoverningScopes } from './decision.js';
import { isSafeMethod } from './browser.js';
import { parseAddressInto } from './network.js';
import { foldCase, isPrefixPath, type Scope, type ScopeKind } from './scope.js';
import { jobsPath, type PathPrefixes } from './path-scope.js';


export function isClosedByDefault(by: GoverningScopes): by is ClosedByDefault {
  return 'kind' in by;
}

export function isOpen(by: GoverningScopes): boolean {
  return !isClosedByDefault(by) && by.length === 0;
}

/** The governing scopes as a decision names them. */
export function governingOf(by: GoverningScopes): readonly Scope[] {
  return isClosedByDefault(by) ? [by.scope] : by.map((s) => s.scope);
}

/** The request's address, parsed: reused, as a grant is looked up to completion (core/network.ts parseAddressInto). */
const ADDRESS = new Uint32Array(4);


/**
 * A network of a governing scope holding the address grants (the first governing scope, in order, that has one; its
 * most specific network), before any credential is looked at; undefined otherwise, and always under the closed-by-
 * default stand-in, which holds nothing. Allocates nothing but the decision.
 */
export function networkGrant(area: Area, path: string, by: GoverningScopes, address: string): Extract<Decision, { outcome: 'granted-network' }> | undefined {
  if (isClosedByDefault(by)) return undefined;
  let family: 4 | 6 | 0 | undefined;
  for (const entry of by) {
    if (entry.networks === undefined) continue;
    family ??= parseAddressInto(address, ADDRESS);
    if (family === 0) return undefined;
    const n = entry.networks.find(family, ADDRESS);
    if (n !== undefined) return { outcome: 'granted-network', area, governing: governingOf(by), path, closedByDefault: false, scope: entry.scope, scopeKey: entry.key, network: n.cidr, address };
  }
  return undefined;
}

/** The folded segments of the request a path scope stands for: an execution, a stations write, or its own path. */
export function ownRequest(value: string, prefixes: PathPrefixes): readonly string[] {
  if (value === 'collections/stations') return [...prefixes.apiPrefix, 'collections', 'stations'];
  if (!isPrefixPath(value)) return [...prefixes.apiPrefix, 'processes', value.slice('processes/'.length), 'execution'];
  return value.split('/');
}

function startsWith(segments: readonly string[], prefix: readonly string[]): boolean {
  if (segments.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (segments[i] !== prefix[i]) return false;
  return true;
}

/** The segments case-folded (foldCase); the same array when none changes, as for most requests. */
export function foldSegments(segments: readonly string[]): readonly string[] {
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i]!;
    if (foldCase(seg) !== seg) return segments.map(foldCase);
  }
  return segments;
}

/**
 * Finds the closed candidate scopes of a normalized request (docs/access-rules.md "From a request to a decision", step 3). `segments` are
 * case-folded, as the index's keys are; `method` is null when unstated, which is never a safe method.
 */
export function governingFor(index: AccessIndex, config: AccessConfig, method: string | null, segments: readonly string[]): { area: Area; by: GoverningScopes } {
  const found = new Candidates();
  let area: Area = 'other';
  // The stand-in when the request is closed by default (an execution, a stations or jobs write).
  let fallback: ClosedByDefault | undefined;
  // Prefix path scopes (`wis2downloader`) govern their path and below wherever it is, every method.
  found.prefixRuns(index, segments);
  if (startsWith(segments, config.wafPrefix)) {
    area = 'waf';
    // The segments after the prefix, read in place.
    const from = config.wafPrefix.length;
    if (segments[from] !== 'metadata') {
      found.topicRuns(index, segments, from);
      for (let i = from; i < segments.length; i++) found.datasetPrefixes(index, segments[i]!);
    }
  } else if (startsWith(segments, config.apiPrefix)) {
    area = 'api';
    fallback = apiCandidates(found, index, config, method, segments);
  }
  return { area, by: settle(found, fallback, config) };
}

/** Step 2 below the API prefix: collections, stations writes, executions, jobs; returns the default-closed stand-in. */
function apiCandidates(found: Candidates, index: AccessIndex, config: AccessConfig, method: string | null, segments: readonly string[]): ClosedByDefault | undefined {
  const resource = segments[config.apiPrefix.length];
  const id = segments[config.apiPrefix.length + 1];
  const safe = isSafeMethod(method);
  if (resource === 'collections' && id !== undefined) {
    if (id === 'stations') {
      if (safe) return undefined;
      found.add(index.paths.get('collections/stations'));
      return DEFAULT_STATIONS_SCOPE;
    }
    if (!(id === 'discovery-metadata' && safe)) {
      found.topicRuns(index, id.split('.'));
      found.datasetPrefixes(index, id);
    }
  } else if (resource === 'processes' && id !== undefined && method !== 'OPTIONS') {
    found.processPrefixes(index, id);
    return defaultProcessScope(id);
  } else if (resource === 'jobs' && !safe) {
    // Dismissing a job (DELETE) and any other unsafe request on jobs: closed by default like an execution.
    return jobsScope(config);
  }
  return undefined;
}

/**
 * The governing scopes (docs/access-rules.md "From a request to a decision", steps 4 and 5, and "Public"): any candidate with a grant or
 * `closed: true` governs, the most specific first, and no public scope opens what it covers. With none, a request
 * closed by default is governed by its stand-in unless a public scope names exactly what the stand-in closes.
 */
function settle(found: Candidates, fallback: ClosedByDefault | undefined, config: AccessConfig): GoverningScopes {
  if (!found.none) return found.mostSpecific();
  if (fallback === undefined || config.openPathsByDefault) return NO_SCOPES;
  return found.lifts(fallback, config.apiPrefix.length) ? NO_SCOPES : fallback;
}

/** The stand-in (ClosedByDefault) for the path scope `value`. */
const byDefault = (value: string): ClosedByDefault => ({ kind: 'closed-by-default', scope: { kind: 'path', value } });
const DEFAULT_STATIONS_SCOPE = byDefault('collections/stations');
const PROCESS_ID = /^[a-z0-9_]+(-[a-z0-9_]+)*$/;
const DEFAULT_PROCESSES_SCOPE = byDefault('processes');

/** The default-closed stand-in for a process: `processes/<id>` when the id could be a scope's, else `processes`. */
function defaultProcessScope(id: string): ClosedByDefault {
  return id.length <= 200 && PROCESS_ID.test(id) ? byDefault(`processes/${id}`) : DEFAULT_PROCESSES_SCOPE;
}

/** The stand-in for unsafe requests on jobs, `<api prefix>/jobs` (a prefix path), one per prefix. */
const JOBS_SCOPES = new Map<readonly string[], ClosedByDefault>();
function jobsScope(prefixes: PathPrefixes): ClosedByDefault {
  let scope = JOBS_SCOPES.get(prefixes.apiPrefix);
  if (scope === undefined) {
    if (JOBS_SCOPES.size > 16) JOBS_SCOPES.clear();
    JOBS_SCOPES.set(prefixes.apiPrefix, (scope = byDefault(jobsPath(prefixes))));
  }
  return scope;
}

/**
 * Collects candidates (closed ones, and public ones apart); allocation only starts with the first hit, so open
 * requests (the common case) cost a few map lookups.
 */
export const NO_SCOPES: readonly IndexedScope[] = Object.freeze([]);

export class Candidates {
  private hits: IndexedScope[] | undefined;
  /** Public candidates, apart: they never govern, and lift only a default that they name exactly (lifts). */
  private publics: IndexedScope[] | undefined;

  /** No candidate with a grant or `closed: true` (public ones aside). */
  get none(): boolean {
    return this.hits === undefined;
  }

  add(entry: IndexedScope | undefined): void {
    if (!entry) return;
    if (entry.public) (this.publics ??= []).push(entry);
    else (this.hits ??= []).push(entry);
  }

  /**
   * Whether a public candidate lifts the default-closed stand-in: a process id or collections/stations named
   * exactly (not the `-` family of a process), or for jobs a prefix path below the API prefix (at or below
   * `<api>/jobs`: the candidates are prefixes of the request). A public prefix path never lifts an execution or a
   * stations write, whatever it spells.
   */
  lifts(fallback: ClosedByDefault, apiDepth: number): boolean {
    const publics = this.publics;
    if (!publics) return false;
    const jobs = isPrefixPath(fallback.scope.value);
    for (const p of publics) {
      const value = foldCase(p.scope.value);
      if (isPrefixPath(value) ? jobs && p.depth > apiDepth : value === fallback.scope.value) return true;
    }
    return false;
  }

  /** Topic scopes whose levels appear as consecutive items of `levels` (from index `from` on), starting anywhere. */
  topicRuns(index: AccessIndex, levels: readonly string[], from = 0): void {
    if (index.topics.size === 0) return;
    for (let start = from; start < levels.length; start++) {
      let node: TopicNode | undefined = index.topics.get(levels[start]!);
      for (let i = start + 1; node; i++) {
        this.add(node.scope);
        if (i >= levels.length) break;
        node = node.children.get(levels[i]!);
      }
    }
  }

  /** Prefix path scopes whose segments begin `segments` (segment-exact: `wis2downloader` does not cover `wis2downloaderx`). */
  prefixRuns(index: AccessIndex, segments: readonly string[]): void {
    const root = index.prefixes;
    if (root === undefined || segments.length === 0) return;
    let node: TopicNode | undefined = root.get(segments[0]!);
    for (let i = 1; node; i++) {
      this.add(node.scope);
      if (i >= segments.length) break;
      node = node.children.get(segments[i]!);
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

  /**
   * The deepest closed candidates of each kind, each once, in the order first found; candidates of
   * different kinds govern together. A single hit (the common governed case) is returned as it is.
   */
  mostSpecific(): readonly IndexedScope[] {
    const hits = this.hits;
    if (!hits) return NO_SCOPES;
    if (hits.length === 1) return hits;
    const deepest: Record<ScopeKind, number> = { topic: 0, dataset: 0, path: 0 };
    for (const h of hits) if (h.depth > deepest[h.scope.kind]) deepest[h.scope.kind] = h.depth;
    const out: IndexedScope[] = [];
    // `includes` is fine for the few hits of a real path; a long crafted path can hit hundreds, hence the Set.
    const seen = hits.length > 16 ? new Set<IndexedScope>() : undefined;
    for (const h of hits) {
      if (h.depth !== deepest[h.scope.kind]) continue;
      if (seen ? seen.has(h) : out.includes(h)) continue;
      seen?.add(h);
      out.push(h);
    }
    return out;
  }
}

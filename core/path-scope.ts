/**
 * Path scopes against the request prefixes (docs/access-rules.md, "What can be protected" and "Open, closed, and closed by default"). Path scopes
 * are written from the host's root, so `oapi/processes/svc` and `processes/svc` could name the same requests. What
 * lies below the API prefix's `processes/` and `collections/` belongs to the special forms: a path scope naming it
 * is canonicalised to the special form (`processes/svc`, `collections/stations`) where the two mean the same,
 * else refused with the form to use. A path at or above a prefix (`oapi`, `data`) may be closed, never public.
 */
import { err, ok, type Result } from './result.js';
import { checkScope, foldCase, parseScope, type Scope, type ScopeKind } from './scope.js';

/** The request prefixes as case-folded segments (`/data` → ['data']), as AccessConfig holds them. */
export interface PathPrefixes {
  readonly wafPrefix: readonly string[];
  readonly apiPrefix: readonly string[];
}

export const DEFAULT_PREFIXES: PathPrefixes = { wafPrefix: ['data'], apiPrefix: ['oapi'] };

const PROCESS_ID = /^[A-Za-z0-9_]+(-[A-Za-z0-9_]+)*$/;

function startsWithSegments(segments: readonly string[], prefix: readonly string[]): boolean {
  return segments.length >= prefix.length && prefix.every((p, i) => segments[i] === p);
}

/** `/oapi`, for messages. */
const shown = (prefix: readonly string[]): string => `/${prefix.join('/')}`;

/**
 * The special form a path scope below the API prefix's `processes/` or `collections/` names, or why it has none
 * (the message names the form to use). Undefined when the path is not below them.
 */
function specialFormOf(value: string, prefixes: PathPrefixes): Result<string> | undefined {
  const segments = value.split('/');
  const folded = segments.map(foldCase);
  const api = prefixes.apiPrefix;
  if (!startsWithSegments(folded, api)) return undefined;
  const [resource, id, ...below] = folded.slice(api.length);
  const where = `${value} names ${shown(api)}/${resource ?? ''}`;
  if (resource === 'processes') {
    const original = segments[api.length + 1];
    if (original !== undefined && PROCESS_ID.test(original) && below.length === 0) return ok(`processes/${original}`);
    const hint = original !== undefined && PROCESS_ID.test(original) ? `processes/${original}` : 'processes/<process-id-prefix> (e.g. processes/svc)';
    return err(`${where}..., which process scopes govern: use the path ${hint}; it governs executing every process whose id is that prefix or starts with it and "-"`);
  }
  if (resource !== 'collections') return undefined;
  if (id === 'stations' && below.length === 0) return ok('collections/stations');
  if (id === 'stations') return err(`${where}/stations/..., which the path collections/stations governs (writes to ${shown(api)}/collections/stations and below): use the path collections/stations`);
  const collection = id === undefined ? '<collection-id>' : segments[api.length + 1]!;
  return err(`${where}${id === undefined ? '' : `/${collection}`}, which is governed by the collection id: use --topic-hierarchy ${collection} or --metadata-id ${collection} (or the path collections/stations for stations writes)`);
}

/**
 * What a path scope typed by a person (the CLI, an import) becomes under the prefixes: itself, the special form it
 * names (`oapi/processes/svc` → `processes/svc`), or an error naming the form to use. `value` has no leading or
 * trailing `/` (parseScope strips them first).
 */
export function canonicalPath(value: string, prefixes: PathPrefixes = DEFAULT_PREFIXES): Result<string> {
  return specialFormOf(value, prefixes) ?? ok(value);
}

/**
 * Why a stored path scope is in a refused form (an object written before the rule, or with other prefixes): it names
 * what a special form governs. Such an object is compiled as it is written but never as public, and flagged.
 */
export function refusedPathForm(value: string, prefixes: PathPrefixes = DEFAULT_PREFIXES): string | undefined {
  const special = specialFormOf(value, prefixes);
  if (special === undefined) return undefined;
  return special.ok ? `${value} names what the path ${special.value} governs: use the path ${special.value}` : special.error;
}

/**
 * Why a path scope cannot be public, or undefined when it can: a refused form, or a path at or above a prefix
 * (`oapi` would open every execution and stations write that is closed by default).
 */
export function publicRefusal(value: string, prefixes: PathPrefixes = DEFAULT_PREFIXES): string | undefined {
  const refused = refusedPathForm(value, prefixes);
  if (refused !== undefined) return refused;
  const folded = value.split('/').map(foldCase);
  for (const prefix of [prefixes.apiPrefix, prefixes.wafPrefix]) {
    if (startsWithSegments(prefix, folded)) {
      return `${value} is at or above the prefix ${shown(prefix)}: such a path may be closed, never public (public opens only what it names: a process id, collections/stations, or a path below ${shown(prefixes.apiPrefix)}/jobs)`;
    }
  }
  return undefined;
}

/**
 * Unsafe methods on `<api prefix>/jobs...` (dismissing a job) are closed by default: the prefix path that names them.
 * A path scope there or below governs them when it has a grant, or lifts the default when public.
 */
export function jobsPath(prefixes: PathPrefixes): string {
  return [...prefixes.apiPrefix, 'jobs'].join('/');
}

/** Whether a prefix path scope lies at or below `<api prefix>/jobs` (its unsafe requests are closed by default). */
export function isJobsPath(value: string, prefixes: PathPrefixes): boolean {
  return startsWithSegments(value.split('/').map(foldCase), [...prefixes.apiPrefix, 'jobs']);
}

/**
 * parseScope, then a path canonicalised under the prefixes (canonicalPath): what the CLI reads from `--path`. The
 * result says whether the value stored differs from what was typed (`/processes/svc/`, `oapi/processes/svc`), so
 * the CLI can say so.
 */
export function parseScopeUnder(kind: ScopeKind, raw: string, prefixes: PathPrefixes = DEFAULT_PREFIXES): Result<{ scope: Scope; rewritten: boolean }> {
  if (kind !== 'path') {
    const parsed = parseScope(kind, raw);
    return parsed.ok ? ok({ scope: parsed.value, rewritten: false }) : parsed;
  }
  // Below the API prefix first: `oapi/collections/urn:x` is refused with the form to use, not as a bad path.
  const canonical = canonicalPath(raw.trim().replace(/^\/+|\/+$/g, ''), prefixes);
  if (!canonical.ok) return canonical;
  const checked = checkScope({ kind, value: canonical.value });
  if (!checked.ok) return checked;
  return ok({ scope: checked.value, rewritten: checked.value.value !== raw.trim() });
}

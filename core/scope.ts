// The scope grammar: the three kinds, their values' syntax and hierarchy, canonical keys and case folding.
import { createHash } from 'node:crypto';
import { err, ok, type Result } from './result.js';

/**
 * The three kinds of scope (docs/access-rules.md). Each kind has its own hierarchy separator, which is what
 * "more specific" means for it: topic levels split at `.`, dataset ids at `:`, process ids at `-`.
 */
export type ScopeKind = 'topic' | 'dataset' | 'path';

export interface Scope {
  readonly kind: ScopeKind;
  readonly value: string;
}

/** The ProtectedScope spec field that carries each kind. */
export const SCOPE_FIELD = { topic: 'topicHierarchy', dataset: 'metadataId', path: 'path' } as const satisfies Record<ScopeKind, string>;
export type ScopeField = (typeof SCOPE_FIELD)[ScopeKind];
export const SCOPE_KINDS: readonly ScopeKind[] = ['topic', 'dataset', 'path'];

// These patterns are repeated verbatim in crds/protectedscope.yaml; a test keeps the two equal.
export const TOPIC_PATTERN = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;
export const DATASET_PATTERN = /^urn:[A-Za-z0-9._~-]+(:[A-Za-z0-9._~-]+)*$/;
// A path is the stations collection, a process-id prefix, or any other path of the host (`wis2downloader`,
// `wis2downloader/subscriptions`): segments that do not start with a dot (so never `.` or `..`).
export const PATH_PATTERN = /^(collections\/stations|processes\/[A-Za-z0-9_]+(-[A-Za-z0-9_]+)*|[A-Za-z0-9_~-][A-Za-z0-9._~-]*(\/[A-Za-z0-9_~-][A-Za-z0-9._~-]*)*)$/;
/**
 * The first segments only the two special forms may use: `processes/a.b` or `collections/x` as a prefix path would
 * compete with the process and collection rules for the same requests. Repeated in the CRD's CEL.
 */
const RESERVED_PATH = /^(processes|collections)(\/|$)/i;
const SPECIAL_PATH = /^(collections\/stations|processes\/[A-Za-z0-9_]+(-[A-Za-z0-9_]+)*)$/;

/** A path scope other than `collections/stations` and `processes/<p>`: it governs its path and below, every method. */
export function isPrefixPath(value: string): boolean {
  return !SPECIAL_PATH.test(value);
}
export const MAX_LENGTH = { topic: 512, dataset: 512, path: 256 } as const satisfies Record<ScopeKind, number>;

const HINT: Record<ScopeKind, string> = {
  topic: 'a topic hierarchy is dot-separated levels of letters, digits, "_" and "-", e.g. origin.a.wis2.mw-met.data.core (the slash form origin/a/wis2/... is accepted too)',
  dataset: 'a metadata id is a URN of letters, digits and "._~-" parts separated by ":", e.g. urn:wmo:md:mw-met:surface-weather-observations',
  path: 'a path is collections/stations, processes/<process-id-prefix> (e.g. processes/svc-synop2bufr), or any other path of the host without the leading "/" (e.g. wis2downloader): segments of letters, digits and "._~-", not starting with "."',
};

/** Parses what a person typed (CLI) or a manifest holds into a canonical scope; topics may use the slash form. */
export function parseScope(kind: ScopeKind, raw: string): Result<Scope> {
  let value = raw.trim();
  if (kind === 'topic' && value.includes('/') && !value.includes('.')) {
    // `/origin/a/` is not read as origin.a: a slash at either end says the levels are not all there.
    if (value.startsWith('/') || value.endsWith('/')) {
      return err(`invalid topic hierarchy ${JSON.stringify(value)}: no "/" at the start or the end (write the levels alone, e.g. ${value.replace(/^\/+|\/+$/g, '') || 'origin/a/wis2'})`);
    }
    value = value.replaceAll('/', '.');
  }
  // `--path /wis2downloader/` names the same path as `wis2downloader`.
  if (kind === 'path') value = value.replace(/^\/+|\/+$/g, '');
  return checkScope({ kind, value });
}

/** Checks a scope already in canonical form (as stored in a ProtectedScope or a snapshot). */
export function checkScope(scope: Scope): Result<Scope> {
  const { kind, value } = scope;
  const pattern = kind === 'topic' ? TOPIC_PATTERN : kind === 'dataset' ? DATASET_PATTERN : PATH_PATTERN;
  if (value.length === 0) return err(`empty ${describeKind(kind)}: ${HINT[kind]}`);
  if (value.length > MAX_LENGTH[kind]) return err(`${describeKind(kind)} is longer than ${MAX_LENGTH[kind]} characters`);
  if (!pattern.test(value)) return err(`invalid ${describeKind(kind)} ${JSON.stringify(value)}: ${HINT[kind]}`);
  if (kind === 'path' && RESERVED_PATH.test(value) && !SPECIAL_PATH.test(value)) {
    return err(`invalid path ${JSON.stringify(value)}: below processes/ only a process-id prefix (letters, digits, "_" and "-"), below collections/ only stations`);
  }
  return ok({ kind, value });
}

function describeKind(kind: ScopeKind): string {
  return kind === 'topic' ? 'topic hierarchy' : kind === 'dataset' ? 'metadata id' : 'path';
}

/** `<kind>:<value>`, the form used in headers, logs, metrics and map keys. */
export function scopeKey(scope: Scope): string {
  return `${scope.kind}:${scope.value}`;
}

/**
 * The form names are compared in for governance (docs/access-rules.md "Normalization"): a backend may serve
 * `/OAPI/processes/SVC-x` as `/oapi/processes/svc-x`, so a case variant must never escape the scope it
 * names. Scope values are ASCII, so lowering ASCII letters is enough for them; other characters are folded
 * through upper case first so that letters whose folding lands in ASCII (the Kelvin sign, long s, dotless
 * i) do too. Returns `s` itself when nothing changes, which is the common case on the hot path.
 */
export function foldCase(s: string): string {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if ((c >= 0x41 && c <= 0x5a) || c >= 0x80) return s.toUpperCase().toLowerCase();
  }
  return s;
}

/** The levels of a scope in its own hierarchy; their count is the scope's specificity. */
export function scopeLevels(scope: Scope): string[] {
  switch (scope.kind) {
    case 'topic':
      return scope.value.split('.');
    case 'dataset':
      return scope.value.split(':');
    case 'path': {
      if (isPrefixPath(scope.value)) return scope.value.split('/');
      const [head, rest = ''] = splitOnce(scope.value, '/');
      return head === 'processes' ? [head, ...rest.split('-')] : [head, rest];
    }
  }
}

export function compareScopes(a: Scope, b: Scope): number {
  return a.kind === b.kind ? compareStrings(a.value, b.value) : compareStrings(a.kind, b.kind);
}

export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The object name the CLI gives a scope's ProtectedScope: kind, a readable slug and 8 hex of a hash of the
 * scope, so one scope maps to one object and two scopes with the same slug still get different names.
 */
export function scopeObjectName(scope: Scope): string {
  const digest = createHash('sha256').update(scopeKey(scope)).digest('hex').slice(0, 8);
  const slug = scope.value
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 63 - scope.kind.length - 10)
    .replace(/-+$/, '');
  return [scope.kind, slug, digest].filter((p) => p.length > 0).join('-');
}

function splitOnce(s: string, sep: string): [string, string] {
  const i = s.indexOf(sep);
  return i < 0 ? [s, ''] : [s.slice(0, i), s.slice(i + sep.length)];
}

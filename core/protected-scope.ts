// The ProtectedScope resource: its types, one list of its fields, validation, and the spec edits every writer goes through.
import { checkScope, SCOPE_FIELD, SCOPE_KINDS, type Scope, type ScopeField, type ScopeKind } from './scope.js';
import { checkSubject, MAX_SUBJECTS_PER_OBJECT, SUBJECT_FIELDS, subjectKey, type Subject } from './subject.js';
import { excessiveIterationsOf, HASH_PATTERN, MAX_IMPORTED_ITERATIONS, TOKEN_ID_PATTERN, tokenIdOf, type TokenHash } from './token.js';
import { err, ok, type Result } from './result.js';
import type { OpenOrClosed } from './scope-state.js';
import { MAX_CIDR_LENGTH, parseNetwork } from './network.js';
import { isRecord } from '../lib/is-record.js';

export const API_GROUP = 'auth.svc.io';
export const API_VERSION = 'v1alpha1';
export const API_GROUP_VERSION = `${API_GROUP}/${API_VERSION}`;
export const KIND = 'ProtectedScope';
export const PLURAL = 'protectedscopes';
export const MAX_TOKENS_PER_OBJECT = 1000;
export const MAX_DESCRIPTION_LENGTH = 256;
export const MAX_NETWORKS_PER_OBJECT = 256;

export interface TokenRecord {
  readonly id: string;
  readonly hash: TokenHash;
  readonly description?: string;
  readonly createdAt: string;
  readonly expiresAt?: string;
}

/**
 * A network whose clients the scope admits by address (core/network.ts): `cidr` in canonical form
 * (`203.0.113.0/24`, `2001:db8::/32`), unique within the object.
 */
export interface NetworkRecord {
  readonly cidr: string;
  /** Whose network it is (`Global Cache, Offenbach`): shown by show, never in the snapshot; at most 256 characters. */
  readonly description?: string;
}

/** Exactly one scope field is set; the type makes the other two absent. */
export type ProtectedScopeSpec = (
  | { readonly topicHierarchy: string; readonly metadataId?: never; readonly path?: never }
  | { readonly metadataId: string; readonly topicHierarchy?: never; readonly path?: never }
  | { readonly path: string; readonly topicHierarchy?: never; readonly metadataId?: never }
) & {
  /** Required in every manifest the CRD or core validates; absent only on objects stored before that rule. */
  readonly tokens?: readonly TokenRecord[];
  /** Keeps the scope closed with zero tokens (an embargoed dataset whose tokens come later). */
  readonly closed?: boolean;
  /** Identities of the OpenID provider granted access besides the tokens; any subject closes the scope. */
  readonly subjects?: readonly Subject[];
  /**
   * A path scope open for every method, even where paths are closed by default (wis2box's read-only processes
   * that its UI calls without a token). A contradiction with tokens, subjects or `closed: true`: invalid together.
   */
  readonly public?: boolean;
  /** Networks granted by client address, as the proxy saw it; any network closes the scope, as a token does. */
  readonly networks?: readonly NetworkRecord[];
};

export interface Condition {
  readonly type: string;
  readonly status: 'True' | 'False' | 'Unknown';
  readonly reason: string;
  readonly message: string;
  readonly observedGeneration?: number;
  readonly lastTransitionTime: string;
}

export interface ProtectedScopeStatus {
  readonly observedGeneration?: number;
  /** The scope value (without its kind), for the CRD's Scope printer column. */
  readonly scope?: string;
  /** The spec field that holds the scope (topicHierarchy, metadataId or path), as the CRD's Kind column shows. */
  readonly kind?: ScopeField;
  readonly state?: OpenOrClosed;
  readonly tokens?: number;
  readonly activeTokens?: number;
  /** How many subjects (users and groups) the object grants. */
  readonly subjects?: number;
  /** How many networks the object grants. */
  readonly networks?: number;
  readonly conditions?: readonly Condition[];
  readonly mergedWith?: readonly string[];
}

export interface ObjectMeta {
  readonly name: string;
  readonly namespace?: string;
  readonly generation?: number;
  readonly resourceVersion?: string;
  readonly uid?: string;
  readonly creationTimestamp?: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
}

export interface ProtectedScope {
  readonly apiVersion: typeof API_GROUP_VERSION;
  readonly kind: typeof KIND;
  readonly metadata: ObjectMeta;
  readonly spec: ProtectedScopeSpec;
  readonly status?: ProtectedScopeStatus;
}

/** One problem with a manifest, naming the field the way the API server would (`spec.tokens[1].hash`). */
export interface FieldError {
  readonly field: string;
  readonly message: string;
}

export function scopeOf(spec: ProtectedScopeSpec): Scope {
  if (spec.topicHierarchy !== undefined) return { kind: 'topic', value: spec.topicHierarchy };
  if (spec.metadataId !== undefined) return { kind: 'dataset', value: spec.metadataId };
  return { kind: 'path', value: spec.path };
}

/** A spec's fields besides its scope: what the CLI's commands and the operator's sanitizing change. */
type SpecFields = Omit<ProtectedScopeSpec, ScopeField>;

/** The spec of a scope: its one scope field first, then the given fields in SPEC_FIELDS order (undefined ones left out). */
export function specFor(scope: Scope, fields: SpecFields): ProtectedScopeSpec {
  const rest = withoutUndefined({ tokens: fields.tokens, closed: fields.closed, subjects: fields.subjects, networks: fields.networks, public: fields.public });
  switch (scope.kind) {
    case 'topic':
      return { topicHierarchy: scope.value, ...rest };
    case 'dataset':
      return { metadataId: scope.value, ...rest };
    case 'path':
      return { path: scope.value, ...rest };
  }
}

/**
 * The object with some of its spec's fields changed, its scope as it is (the one way a command or the operator edits a
 * spec): a field given as undefined goes; the others keep their place, so a hand-written manifest's diff shows only
 * what changed.
 */
export function withSpec(o: ProtectedScope, change: SpecFields): ProtectedScope {
  return { ...o, spec: withoutUndefined({ ...o.spec, ...change }) };
}

/** `fields` without the non-scope fields whose value is undefined (a spread of `{public: undefined}` states nothing). */
function withoutUndefined<T extends SpecFields>(fields: T): T {
  for (const f of SPEC_EXTRA_FIELDS) if (fields[f] === undefined) delete fields[f];
  return fields;
}

/** Whether the object says `closed: true` (the scope stays closed whatever its tokens). */
export function closedByFlag(ps: ProtectedScope): boolean {
  return ps.spec.closed === true;
}

/** Whether the object declares its path scope public (every method open). */
export function publicByFlag(ps: ProtectedScope): boolean {
  return ps.spec.public === true;
}

export function tokensOf(ps: ProtectedScope): readonly TokenRecord[] {
  return ps.spec.tokens ?? [];
}

/** The token hashes some object of a scope holds, each once: the same token in two objects of one scope is one token. */
export function tokenHashesOf(objects: readonly ProtectedScope[]): Set<string> {
  return new Set(objects.flatMap((o) => tokensOf(o).map((t) => t.hash)));
}

export function subjectsOf(ps: ProtectedScope): readonly Subject[] {
  return ps.spec.subjects ?? [];
}

export function networksOf(ps: ProtectedScope): readonly NetworkRecord[] {
  return ps.spec.networks ?? [];
}

// RFC 3339 as Kubernetes' date-time format accepts it.
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|[+-](\d{2}):(\d{2}))$/;
const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export function isDateTime(v: unknown): v is string {
  if (typeof v !== 'string') return false;
  const m = DATE_TIME.exec(v);
  if (!m || Number.isNaN(Date.parse(v))) return false;
  // Date.parse alone is not enough: it rolls impossible days over (2026-02-30 becomes March 2) and
  // accepts 24:00:00, both of which the API server's date-time format refuses.
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const daysInMonth = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1];
  if (daysInMonth === undefined || day < 1 || day > daysInMonth || hour > 23 || minute > 59 || second > 59) return false;
  return m[7] === undefined || (Number(m[7]) <= 23 && Number(m[8]) <= 59);
}

/**
 * The fields of each level of the object, as the CRD's schema lists them (a test holds the two equal). A
 * field outside them is an error, as kubectl's strict field validation makes it: a misspelt `tokenz:` must
 * not load as a scope with no tokens, which would open it.
 */
export const TOP_LEVEL_FIELDS = ['apiVersion', 'kind', 'metadata', 'spec', 'status'] as const;
export const SPEC_FIELDS = ['topicHierarchy', 'metadataId', 'path', 'tokens', 'closed', 'subjects', 'networks', 'public'] as const;
/** The spec fields besides the scope's (SpecFields). */
const SPEC_EXTRA_FIELDS = ['tokens', 'closed', 'subjects', 'networks', 'public'] as const;
/** Spec fields that must be stated: an empty token list is a statement, a missing one may be a typo. */
export const REQUIRED_SPEC_FIELDS = ['tokens'] as const;
export const TOKEN_FIELDS = ['id', 'hash', 'description', 'createdAt', 'expiresAt'] as const;
export const NETWORK_FIELDS = ['cidr', 'description'] as const;
export const STATUS_FIELDS = ['observedGeneration', 'state', 'scope', 'kind', 'tokens', 'activeTokens', 'subjects', 'networks', 'mergedWith', 'conditions'] as const;
export const CONDITION_FIELDS = ['type', 'status', 'reason', 'message', 'observedGeneration', 'lastTransitionTime'] as const;

/** Holds only when the two key sets are the same: a field added to a type but not to its list fails to compile. */
type SameKeys<A extends PropertyKey, B extends PropertyKey> = [A] extends [B] ? ([B] extends [A] ? true : never) : never;
const specFieldsAreTheSpec: SameKeys<(typeof SPEC_FIELDS)[number], keyof ProtectedScopeSpec> = true;
const extraFieldsAreTheFields: SameKeys<(typeof SPEC_EXTRA_FIELDS)[number], keyof SpecFields> = true;
const tokenFieldsAreTheRecord: SameKeys<(typeof TOKEN_FIELDS)[number], keyof TokenRecord> = true;
const networkFieldsAreTheRecord: SameKeys<(typeof NETWORK_FIELDS)[number], keyof NetworkRecord> = true;
const statusFieldsAreTheStatus: SameKeys<(typeof STATUS_FIELDS)[number], keyof ProtectedScopeStatus> = true;
void [specFieldsAreTheSpec, extraFieldsAreTheFields, tokenFieldsAreTheRecord, networkFieldsAreTheRecord, statusFieldsAreTheStatus];

type StatusField = (typeof STATUS_FIELDS)[number];

/** `fields` of `from` in that order, leaving out the absent ones. */
function inOrder<T extends object>(from: T, fields: readonly (keyof T)[]): T {
  const out: Partial<T> = {};
  for (const f of fields) if (from[f] !== undefined) out[f] = from[f];
  return out as T;
}

/**
 * The spec with its keys in SPEC_FIELDS order (token records in TOKEN_FIELDS order, subjects in SUBJECT_FIELDS
 * order, networks in NETWORK_FIELDS order) and every field kept: the API server hands objects back with sorted keys,
 * and a manifest written from either backend should read the same. `tokens` is always stated (REQUIRED_SPEC_FIELDS).
 */
export function orderedSpec(spec: ProtectedScopeSpec): ProtectedScopeSpec {
  const tokens = (spec.tokens ?? []).map((t) => inOrder(t, TOKEN_FIELDS));
  const subjects = spec.subjects?.map((s) => inOrder(s, SUBJECT_FIELDS));
  const networks = spec.networks?.map((n) => inOrder(n, NETWORK_FIELDS));
  return inOrder({ ...spec, tokens, ...(subjects !== undefined ? { subjects } : {}), ...(networks !== undefined ? { networks } : {}) }, SPEC_FIELDS);
}

/**
 * Every status field the CRD declares, absent ones as null: the JSON merge patch that turns any current status
 * into `s` (a null removes the field). An empty list is absent.
 */
export function statusPatchOf(s: ProtectedScopeStatus): Record<StatusField, unknown> {
  const out = {} as Record<StatusField, unknown>;
  for (const f of STATUS_FIELDS) {
    const v = s[f];
    out[f] = v === undefined || (Array.isArray(v) && v.length === 0) ? null : v;
  }
  return out;
}

/** Kubernetes' ObjectMeta, as the API server accepts it on a custom resource. */
const OBJECT_META_FIELDS = [
  'name', 'generateName', 'namespace', 'selfLink', 'uid', 'resourceVersion', 'generation', 'creationTimestamp', 'deletionTimestamp',
  'deletionGracePeriodSeconds', 'labels', 'annotations', 'ownerReferences', 'finalizers', 'managedFields',
] as const;

function unknownFields(obj: Record<string, unknown>, known: readonly string[], at: string, fail: (field: string, message: string) => void): void {
  for (const key of Object.keys(obj)) {
    if (!known.includes(key)) fail(at ? `${at}.${key}` : key, `unknown field (known: ${known.join(', ')})`);
  }
}

/**
 * Validates an untrusted object as a ProtectedScope with the same rules as the CRD's schema and CEL
 * (crds/protectedscope.yaml) under strict field validation, so the directory backend and svc-auth refuse
 * what the API server refuses.
 */
export function validateProtectedScope(obj: unknown): Result<ProtectedScope, FieldError[]> {
  const errors: FieldError[] = [];
  const fail = (field: string, message: string) => errors.push({ field, message });
  if (!isRecord(obj)) return err([{ field: '', message: 'must be an object' }]);
  unknownFields(obj, TOP_LEVEL_FIELDS, '', fail);
  if (obj.apiVersion !== API_GROUP_VERSION) fail('apiVersion', `must be ${API_GROUP_VERSION}`);
  if (obj.kind !== KIND) fail('kind', `must be ${KIND}`);
  const meta = obj.metadata;
  if (!isRecord(meta)) fail('metadata', 'must be an object');
  else {
    unknownFields(meta, OBJECT_META_FIELDS, 'metadata', fail);
    if (typeof meta.name !== 'string' || meta.name.length > 253 || !NAME.test(meta.name)) {
      fail('metadata.name', 'must be a lowercase DNS subdomain name (a-z, 0-9, "-", "."), at most 253 characters');
    }
  }
  validateStatus(obj.status, fail);
  const spec = obj.spec;
  if (!isRecord(spec)) {
    fail('spec', 'must be an object');
    return err(errors);
  }
  unknownFields(spec, SPEC_FIELDS, 'spec', fail);
  for (const field of REQUIRED_SPEC_FIELDS) {
    if (spec[field] === undefined) fail(`spec.${field}`, 'must be stated (tokens: [] for a scope without tokens)');
  }
  const present = SCOPE_KINDS.filter((k) => spec[SCOPE_FIELD[k]] !== undefined);
  if (present.length !== 1) {
    fail('spec', `exactly one of topicHierarchy, metadataId or path must be set (found ${present.length === 0 ? 'none' : present.map((k) => SCOPE_FIELD[k]).join(', ')})`);
  } else {
    const kind = present[0]!;
    const value = spec[SCOPE_FIELD[kind]];
    const checked = typeof value === 'string' ? checkScope({ kind, value }) : err('must be a string');
    if (!checked.ok) fail(`spec.${SCOPE_FIELD[kind]}`, checked.error);
  }
  if (spec.closed !== undefined && typeof spec.closed !== 'boolean') fail('spec.closed', 'must be true or false');
  validateTokens(spec.tokens, fail, scopeNamed(spec, present));
  validateSubjects(spec.subjects, fail);
  validateNetworks(spec.networks, fail);
  validatePublic(spec, fail);
  return errors.length > 0 ? err(errors) : ok(obj as unknown as ProtectedScope);
}

/** Only the fields: the operator writes the status, and a manifest copied from a cluster may carry one. */
function validateStatus(status: unknown, fail: (field: string, message: string) => void): void {
  if (status === undefined) return;
  if (!isRecord(status)) return fail('status', 'must be an object');
  unknownFields(status, STATUS_FIELDS, 'status', fail);
  if (Array.isArray(status.conditions)) {
    status.conditions.forEach((c: unknown, i) => {
      if (isRecord(c)) unknownFields(c, CONDITION_FIELDS, `status.conditions[${i}]`, fail);
    });
  }
}

/** `path:wis2downloader`, for messages about one of the object's fields; "the scope" when it names none or several. */
function scopeNamed(spec: Record<string, unknown>, present: readonly ScopeKind[]): string {
  const kind = present.length === 1 ? present[0]! : undefined;
  const value = kind === undefined ? undefined : spec[SCOPE_FIELD[kind]];
  return kind !== undefined && typeof value === 'string' ? JSON.stringify(`${kind}:${value.slice(0, 80)}`) : 'the scope';
}

function validateTokens(tokens: unknown, fail: (field: string, message: string) => void, scope: string): void {
  if (tokens === undefined) return;
  if (!Array.isArray(tokens)) {
    fail('spec.tokens', 'must be a list');
    return;
  }
  if (tokens.length > MAX_TOKENS_PER_OBJECT) fail('spec.tokens', `must have at most ${MAX_TOKENS_PER_OBJECT} items`);
  const seen = new Set<string>();
  tokens.forEach((t: unknown, i) => {
    const at = `spec.tokens[${i}]`;
    if (!isRecord(t)) return fail(at, 'must be an object');
    unknownFields(t, TOKEN_FIELDS, at, fail);
    const idOk = typeof t.id === 'string' && TOKEN_ID_PATTERN.test(t.id);
    const hashOk = typeof t.hash === 'string' && HASH_PATTERN.test(t.hash);
    if (!idOk) fail(`${at}.id`, 'must be 12 lowercase hex characters');
    const costly = typeof t.hash === 'string' ? excessiveIterationsOf(t.hash) : undefined;
    if (costly !== undefined) {
      fail(`${at}.hash`, `an imported hash of ${scope} asks for ${costly} PBKDF2 iterations: at most ${MAX_IMPORTED_ITERATIONS} (each wrong token would cost that much per record)`);
    } else if (!hashOk) fail(`${at}.hash`, 'must be sha256:<64 lowercase hex>, or pbkdf2-sha256:<iterations>:<salt hex>:<key hex> (imported)');
    if (idOk && hashOk && t.id !== tokenIdOf(t.hash as TokenHash)) fail(`${at}.id`, 'must be the first 12 hex of hash (of its key, for an imported hash)');
    if (idOk) {
      if (seen.has(t.id as string)) fail(`${at}.id`, `duplicate token id ${t.id as string}`);
      seen.add(t.id as string);
    }
    if (!isDateTime(t.createdAt)) fail(`${at}.createdAt`, 'must be an RFC 3339 date-time');
    if (t.expiresAt !== undefined && !isDateTime(t.expiresAt)) fail(`${at}.expiresAt`, 'must be an RFC 3339 date-time');
    if (t.description !== undefined && (typeof t.description !== 'string' || t.description.length > MAX_DESCRIPTION_LENGTH)) {
      fail(`${at}.description`, `must be a string of at most ${MAX_DESCRIPTION_LENGTH} characters`);
    }
  });
}

/** `public: true` only on a path scope that nothing else closes (the CRD's CEL says the same). */
function validatePublic(spec: Record<string, unknown>, fail: (field: string, message: string) => void): void {
  if (spec.public === undefined) return;
  if (typeof spec.public !== 'boolean') return fail('spec.public', 'must be true or false');
  if (!spec.public) return;
  if (spec.path === undefined) fail('spec.public', 'only a path scope can be public');
  const contradictions = [
    Array.isArray(spec.tokens) && spec.tokens.length > 0 ? 'tokens' : '',
    Array.isArray(spec.subjects) && spec.subjects.length > 0 ? 'subjects' : '',
    Array.isArray(spec.networks) && spec.networks.length > 0 ? 'networks' : '',
    spec.closed === true ? 'closed: true' : '',
  ].filter((c) => c !== '');
  if (contradictions.length > 0) fail('spec.public', `a public scope cannot have ${contradictions.join(', ')} (it would be open and closed at once)`);
}

function validateSubjects(subjects: unknown, fail: (field: string, message: string) => void): void {
  if (subjects === undefined) return;
  if (!Array.isArray(subjects)) return fail('spec.subjects', 'must be a list');
  if (subjects.length > MAX_SUBJECTS_PER_OBJECT) fail('spec.subjects', `must have at most ${MAX_SUBJECTS_PER_OBJECT} items`);
  const seen = new Set<string>();
  subjects.forEach((x: unknown, i) => {
    const at = `spec.subjects[${i}]`;
    if (!isRecord(x)) return fail(at, 'must be an object');
    unknownFields(x, SUBJECT_FIELDS, at, fail);
    const checked = checkSubject(x.kind, x.name);
    if (!checked.ok) return fail(at, checked.error);
    const key = subjectKey(checked.value);
    if (seen.has(key)) fail(at, `duplicate subject ${checked.value.kind} ${checked.value.name}`);
    seen.add(key);
  });
}

/** At most 256 networks, each a canonical CIDR (core/network.ts, the CRD's CEL rule) listed once, with an optional description. */
function validateNetworks(networks: unknown, fail: (field: string, message: string) => void): void {
  if (networks === undefined) return;
  if (!Array.isArray(networks)) return fail('spec.networks', 'must be a list');
  if (networks.length > MAX_NETWORKS_PER_OBJECT) fail('spec.networks', `must have at most ${MAX_NETWORKS_PER_OBJECT} items`);
  const seen = new Set<string>();
  networks.forEach((x: unknown, i) => {
    const at = `spec.networks[${i}]`;
    if (!isRecord(x)) return fail(at, 'must be an object');
    unknownFields(x, NETWORK_FIELDS, at, fail);
    if (typeof x.cidr !== 'string' || x.cidr.length > MAX_CIDR_LENGTH) return fail(`${at}.cidr`, `must be a network ADDRESS/PREFIX of at most ${MAX_CIDR_LENGTH} characters`);
    const parsed = parseNetwork(x.cidr);
    if (!parsed.ok) fail(`${at}.cidr`, parsed.error);
    else if (seen.has(x.cidr)) fail(`${at}.cidr`, `duplicate network ${x.cidr}`);
    seen.add(x.cidr);
    if (x.description !== undefined && (typeof x.description !== 'string' || x.description.length > MAX_DESCRIPTION_LENGTH)) {
      fail(`${at}.description`, `must be a string of at most ${MAX_DESCRIPTION_LENGTH} characters`);
    }
  });
}

export function formatFieldErrors(errors: readonly FieldError[]): string {
  return errors.map((e) => (e.field ? `${e.field}: ${e.message}` : e.message)).join('; ');
}

/** Builds a ProtectedScope object for a scope, as the CLI writes it. */
export function newProtectedScope(scope: Scope, name: string, namespace: string | undefined, tokens: readonly TokenRecord[]): ProtectedScope {
  return {
    apiVersion: API_GROUP_VERSION,
    kind: KIND,
    metadata: namespace === undefined ? { name } : { name, namespace },
    spec: specFor(scope, { tokens }),
  };
}

/** True once a token record has passed its expiry; records without expiry never expire. */
export function isExpired(token: Pick<TokenRecord, 'expiresAt'>, nowMs: number): boolean {
  return token.expiresAt !== undefined && Date.parse(token.expiresAt) <= nowMs;
}


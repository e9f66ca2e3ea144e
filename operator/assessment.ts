/**
 * What the operator makes of one ProtectedScope before anything else: is it valid, which scope does it name,
 * what goes into the snapshot for it, and what the compiler keeps of it between reconciles (its entry).
 *
 * Fail closed. The CRD refuses malformed objects, but if one gets in anyway (an older CRD, a restore from
 * backup) a malformed token record must not silently open its scope: a record whose hash or expiry cannot
 * be read is replaced by an already-expired placeholder no token hashes to, so the scope stays Closed and
 * the record grants nothing. Only an object whose scope itself cannot be read is left out.
 */
import {
  checkScope,
  checkSubject,
  DEFAULT_PREFIXES,
  isDateTime,
  isTokenHash,
  mergeSubjects,
  readNetworks,
  publicRefusal,
  refusedPathForm,
  type PathPrefixes,
  SCOPE_FIELD,
  SCOPE_KINDS,
  scopeKey,
  scopeOf,
  specFor,
  tokensOf,
  validateProtectedScope,
  withSpec,
  type FieldError,
  type NetworkRecord,
  type ProtectedScope,
  type Scope,
  type TokenRecord,
} from '../core/index.js';
import { isRecord } from '../lib/is-record.js';

export const PLACEHOLDER_HASH = `sha256:${'0'.repeat(64)}` as const;
export const EPOCH = '1970-01-01T00:00:00.000Z';

/**
 * A valid object whose path svc-auth does not read as written: a refused form (`oapi/processes/x`, stored before
 * the CRD refused it, or under other prefixes) or public at or above a prefix. It is compiled as it is written
 * but never as public, and its status says so (Ready False with this reason).
 */
interface PathRefusal {
  readonly reason: 'RefusedPath' | 'PublicRefused';
  readonly message: string;
}

/** A valid object: compiled as written (without `public` when its path is refused). */
export interface ValidAssessment {
  readonly valid: true;
  readonly obj: ProtectedScope;
  readonly name: string;
  readonly scope: Scope;
  /** The object as it goes into the snapshot. */
  readonly sanitized: ProtectedScope;
  readonly refused?: PathRefusal;
}

/**
 * An invalid object. When its scope can still be read it is compiled sanitized (unreadable token records as
 * expired placeholders, `closed: true` kept), so it stays closed; otherwise it is left out of the snapshot.
 */
export type InvalidAssessment = {
  readonly valid: false;
  readonly obj: ProtectedScope;
  readonly name: string;
  /** Validation problems, at least one. */
  readonly errors: readonly FieldError[];
} & ({ readonly scope: Scope; readonly sanitized: ProtectedScope } | { readonly scope?: undefined; readonly sanitized?: undefined });

/** What the operator makes of one object: valid, or invalid with its errors (and then compiled sanitized, or left out). */
export type Assessment = ValidAssessment | InvalidAssessment;

/** An assessment whose object goes into the snapshot: every valid one, and an invalid one whose scope can be read. */
export type IncludedAssessment = Assessment & { readonly scope: Scope; readonly sanitized: ProtectedScope };

/** Why a valid object's path is not read as written, and the object as it is compiled then. */
function refusalOf(obj: ProtectedScope, prefixes: PathPrefixes): Pick<ValidAssessment, 'refused' | 'sanitized'> | undefined {
  const path = obj.spec.path;
  if (path === undefined) return undefined;
  const form = refusedPathForm(path, prefixes);
  const isPublic = obj.spec.public === true;
  const notPublic = isPublic ? publicRefusal(path, prefixes) : undefined;
  if (form === undefined && notPublic === undefined) return undefined;
  const sanitized = isPublic ? withSpec(obj, { public: undefined }) : obj;
  const message = notPublic !== undefined ? `compiled as not public: ${notPublic}` : `compiled as written (a prefix path): ${form!}`;
  return { refused: { reason: form !== undefined ? 'RefusedPath' : 'PublicRefused', message }, sanitized };
}

/** A field that should hold a list, as one: absent is none, a single item is a list of one. */
const listOf = (v: unknown): readonly unknown[] => (Array.isArray(v) ? v : v === undefined ? [] : [v]);

export function assess(obj: ProtectedScope, prefixes: PathPrefixes = DEFAULT_PREFIXES): Assessment {
  const name = obj.metadata?.name ?? '';
  const checked = validateProtectedScope(obj);
  if (checked.ok) return { valid: true, obj, name, scope: scopeOf(obj.spec), sanitized: obj, ...refusalOf(obj, prefixes) };
  const errors = checked.error;
  // The object failed validation: its spec is read as the untrusted data it is.
  const raw: unknown = obj.spec;
  const spec = isRecord(raw) ? raw : {};
  const fields = SCOPE_KINDS.filter((kind) => spec[SCOPE_FIELD[kind]] !== undefined);
  if (fields.length !== 1) return { valid: false, obj, name, errors };
  const kind = fields[0]!;
  const value = spec[SCOPE_FIELD[kind]];
  const checkedScope = typeof value === 'string' ? checkScope({ kind, value }) : undefined;
  if (!checkedScope?.ok) return { valid: false, obj, name, errors };
  const scope = checkedScope.value;
  const tokens = listOf(spec.tokens).map(sanitizedRecord);
  // Subjects as for tokens: the valid ones still grant; a bad one keeps the scope closed (closed: true), as a
  // bad token record does through its expired placeholder.
  const checkedSubjects = listOf(spec.subjects).map((x) => (isRecord(x) ? checkSubject(x.kind, x.name) : undefined));
  const subjects = mergeSubjects([checkedSubjects.flatMap((c) => (c?.ok ? [c.value] : []))]);
  const badSubject = checkedSubjects.some((c) => !c?.ok);
  const { networks, badNetwork } = sanitizedNetworks(spec.networks);
  // `closed: true` survives the sanitizing: an invalid object never opens what it closed.
  const closed = spec.closed === true || badSubject || badNetwork;
  const kept = { tokens, ...(closed ? { closed: true } : {}), ...(subjects.length > 0 ? { subjects } : {}), ...(networks.length > 0 ? { networks } : {}) };
  return { valid: false, obj, name, scope, errors, sanitized: { ...obj, spec: specFor(scope, kept) } };
}

/**
 * Networks as for subjects: a readable one (a canonical CIDR) still grants, each once; an unreadable one grants
 * nothing and keeps the scope closed (`badNetwork`: compiled as closed: true), so it never opens what it closed.
 */
function sanitizedNetworks(raw: unknown): { networks: NetworkRecord[]; badNetwork: boolean } {
  const { networks, unreadable } = readNetworks(listOf(raw));
  return { networks: networks.map((n) => ({ cidr: n.cidr })), badNetwork: unreadable };
}

/** One token record of an invalid object: as it is when readable, else an expired placeholder that grants nothing. */
function sanitizedRecord(t: unknown, i: number): TokenRecord {
  const r = isRecord(t) ? t : {};
  const id = typeof r.id === 'string' ? r.id : `invalid-${i}`;
  const createdAt = isDateTime(r.createdAt) ? r.createdAt : EPOCH;
  const hash = typeof r.hash === 'string' && isTokenHash(r.hash) ? r.hash : undefined;
  const expiryOk = r.expiresAt === undefined || isDateTime(r.expiresAt);
  if (hash === undefined || !expiryOk) return { id, hash: PLACEHOLDER_HASH, createdAt, expiresAt: EPOCH };
  return { id, hash, createdAt, ...(isDateTime(r.expiresAt) ? { expiresAt: r.expiresAt } : {}) };
}

interface EntryCounts {
  readonly cacheKey: string;
  readonly tokenCount: number;
  readonly noExpiry: number;
  /** Expiry instants (ms), ascending. */
  readonly expiries: readonly number[];
}

/** An object compiled into its scope's line: its assessment and its scope's key. */
export type IncludedEntry = EntryCounts & { readonly assessment: IncludedAssessment; readonly scopeKey: string };

/** What the compiler keeps of one object between reconciles: everything that depends on its spec only. */
export type ObjectEntry = IncludedEntry | (EntryCounts & { readonly assessment: InvalidAssessment; readonly scopeKey?: undefined });

/** One object assessed, with its token counts and expiries ready for the compiler and the status. */
export function entryFor(o: ProtectedScope, cacheKey: string, prefixes: PathPrefixes = DEFAULT_PREFIXES): ObjectEntry {
  const assessment = assess(o, prefixes);
  if (assessment.sanitized === undefined) return { cacheKey, assessment, tokenCount: 0, noExpiry: 0, expiries: [] };
  const tokens = tokensOf(assessment.sanitized);
  const expiries: number[] = [];
  let noExpiry = 0;
  for (const t of tokens) {
    if (t.expiresAt === undefined) noExpiry++;
    else expiries.push(Date.parse(t.expiresAt));
  }
  expiries.sort((a, b) => a - b);
  return { cacheKey, assessment, scopeKey: scopeKey(assessment.scope), tokenCount: tokens.length, noExpiry, expiries };
}

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
  HASH_PATTERN,
  DEFAULT_PREFIXES,
  isDateTime,
  mergeSubjects,
  publicRefusal,
  refusedPathForm,
  type PathPrefixes,
  SCOPE_FIELD,
  scopeKey,
  scopeOf,
  tokensOf,
  validateProtectedScope,
  type FieldError,
  type ProtectedScope,
  type Scope,
  type TokenRecord,
} from '../core/index.js';

export const PLACEHOLDER_HASH = `sha256:${'0'.repeat(64)}` as const;
export const EPOCH = '1970-01-01T00:00:00.000Z';

export interface Assessment {
  readonly obj: ProtectedScope;
  readonly name: string;
  /** The scope, when the object names exactly one well-formed scope. */
  readonly scope?: Scope;
  /** Validation problems (empty for a valid object). */
  readonly errors: readonly FieldError[];
  /** The object as it goes into the snapshot: tokens sanitized as above; undefined when the object is left out. */
  readonly sanitized?: ProtectedScope;
  /**
   * A valid object whose path svc-auth does not read as written: a refused form (`oapi/processes/x`, stored before
   * the CRD refused it, or under other prefixes) or public at or above a prefix. It is compiled as it is written
   * but never as public, and its status says so (Ready False with this reason).
   */
  readonly refused?: { readonly reason: 'RefusedPath' | 'PublicRefused'; readonly message: string };
}

/** Why a valid object's path is not read as written (Assessment.refused), and the object as it is compiled then. */
function refusalOf(obj: ProtectedScope, prefixes: PathPrefixes): Pick<Assessment, 'refused' | 'sanitized'> | undefined {
  const path = obj.spec.path;
  if (path === undefined) return undefined;
  const form = refusedPathForm(path, prefixes);
  const isPublic = obj.spec.public === true;
  const notPublic = isPublic ? publicRefusal(path, prefixes) : undefined;
  if (form === undefined && notPublic === undefined) return undefined;
  const { public: _dropped, ...spec } = obj.spec;
  const sanitized = isPublic ? ({ ...obj, spec } as ProtectedScope) : obj;
  const message = notPublic !== undefined ? `compiled as not public: ${notPublic}` : `compiled as written (a prefix path): ${form!}`;
  return { refused: { reason: form !== undefined ? 'RefusedPath' : 'PublicRefused', message }, sanitized };
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function assess(obj: ProtectedScope, prefixes: PathPrefixes = DEFAULT_PREFIXES): Assessment {
  const name = obj.metadata?.name ?? '';
  const checked = validateProtectedScope(obj);
  if (checked.ok) return { obj, name, scope: scopeOf(obj.spec), errors: [], sanitized: obj, ...refusalOf(obj, prefixes) };
  const errors = checked.error;
  const spec = isRecord(obj.spec) ? (obj.spec as Record<string, unknown>) : undefined;
  const fields = spec ? (Object.entries(SCOPE_FIELD) as [Scope['kind'], string][]).filter(([, f]) => spec[f] !== undefined) : [];
  if (fields.length !== 1) return { obj, name, errors };
  const [kind, field] = fields[0]!;
  const value = spec![field];
  const checkedScope = typeof value === 'string' ? checkScope({ kind, value }) : undefined;
  if (!checkedScope?.ok) return { obj, name, errors };
  const scope = checkedScope.value;
  const raw = Array.isArray(spec!.tokens) ? (spec!.tokens as unknown[]) : spec!.tokens === undefined ? [] : [spec!.tokens];
  const tokens: TokenRecord[] = raw.map((t, i) => {
    const r = isRecord(t) ? t : {};
    const hashOk = typeof r.hash === 'string' && HASH_PATTERN.test(r.hash);
    const expiryOk = r.expiresAt === undefined || isDateTime(r.expiresAt);
    const id = typeof r.id === 'string' ? r.id : `invalid-${i}`;
    const createdAt = isDateTime(r.createdAt) ? r.createdAt : EPOCH;
    if (!hashOk || !expiryOk) return { id, hash: PLACEHOLDER_HASH, createdAt, expiresAt: EPOCH };
    return { id, hash: r.hash as TokenRecord['hash'], createdAt, ...(r.expiresAt !== undefined ? { expiresAt: r.expiresAt as string } : {}) };
  });
  // Subjects as for tokens: the valid ones still grant; a bad one keeps the scope closed (closed: true), as a
  // bad token record does through its expired placeholder.
  const rawSubjects = Array.isArray(spec!.subjects) ? (spec!.subjects as unknown[]) : spec!.subjects === undefined ? [] : [spec!.subjects];
  const checkedSubjects = rawSubjects.map((x) => (isRecord(x) ? checkSubject(x.kind, x.name) : undefined));
  const subjects = mergeSubjects([checkedSubjects.flatMap((c) => (c?.ok ? [c.value] : []))]);
  const badSubject = checkedSubjects.some((c) => !c?.ok);
  // `closed: true` survives the sanitizing: an invalid object never opens what it closed.
  const closed = spec!.closed === true || badSubject;
  const sanitized = {
    ...obj, spec: { [field]: scope.value, tokens, ...(closed ? { closed: true } : {}), ...(subjects.length > 0 ? { subjects } : {}) },
  } as unknown as ProtectedScope;
  return { obj, name, scope, errors, sanitized };
}

/** What the compiler keeps of one object between reconciles: everything that depends on its spec only. */
export interface ObjectEntry {
  readonly cacheKey: string;
  readonly assessment: Assessment;
  readonly scopeKey?: string;
  readonly tokenCount: number;
  readonly noExpiry: number;
  /** Expiry instants (ms), ascending. */
  readonly expiries: readonly number[];
}

/** One object assessed, with its token counts and expiries ready for the compiler and the status. */
export function entryFor(o: ProtectedScope, cacheKey: string, prefixes: PathPrefixes = DEFAULT_PREFIXES): ObjectEntry {
  const assessment = assess(o, prefixes);
  if (!assessment.sanitized || !assessment.scope) return { cacheKey, assessment, tokenCount: 0, noExpiry: 0, expiries: [] };
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

/**
 * A grant to an identity of the organisation's OpenID provider, shaped like a RoleBinding's subject: `User`
 * matches the username of a verified JWT, `Group` any of its groups, both as kube-apiserver names them (the
 * issuer's prefix and the claim, e.g. `https://login.example.org/dex#alice`: a `sub` is unique only within its
 * issuer). Names are compared exactly, as the API server compares RBAC subjects: `alice` and `Alice` are two users.
 */
import { err, ok, type Result } from './result.js';

const SUBJECT_KINDS = ['User', 'Group'] as const;
export type SubjectKind = (typeof SUBJECT_KINDS)[number];

export interface Subject {
  readonly kind: SubjectKind;
  readonly name: string;
}

export const SUBJECT_FIELDS = ['kind', 'name'] as const;
export const MAX_SUBJECTS_PER_OBJECT = 1000;
const MAX_SUBJECT_NAME_LENGTH = 256;
/** No control characters (a name is printed in tables and logs); the CRD's pattern says the same. */
function hasControlCharacter(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}

export function checkSubject(kind: unknown, name: unknown): Result<Subject> {
  if (!SUBJECT_KINDS.includes(kind as SubjectKind)) return err(`kind must be one of ${SUBJECT_KINDS.join(', ')}`);
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_SUBJECT_NAME_LENGTH || hasControlCharacter(name)) {
    return err(`name must be 1 to ${MAX_SUBJECT_NAME_LENGTH} characters without control characters`);
  }
  return ok({ kind: kind as SubjectKind, name });
}

export const subjectKey = (s: Subject): string => `${s.kind}:${s.name}`;

/** Users before groups, then by name in code-unit order (canonical snapshot bytes). */
export function compareSubjects(a: Subject, b: Subject): number {
  if (a.kind !== b.kind) return a.kind === 'User' ? -1 : 1;
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/** The union of subject lists, each once, sorted. */
export function mergeSubjects(lists: readonly (readonly Subject[])[]): Subject[] {
  const byKey = new Map<string, Subject>();
  for (const list of lists) for (const s of list) byKey.set(subjectKey(s), { kind: s.kind, name: s.name });
  return [...byKey.values()].sort(compareSubjects);
}

/** A verified identity: the issuer, and the username and groups of a JWT that passed verification, prefixed as configured. */
export interface Identity {
  readonly issuer: string;
  readonly user: string;
  readonly groups: readonly string[];
}

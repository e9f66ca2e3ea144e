/**
 * One manifest file as the directory store reads it (svc-auth's --scopes-dir and the CLI's --dir share
 * this): every document, each either a valid ProtectedScope or an object of another kind, or the reasons
 * the file is invalid. An invalid file refuses the whole directory, so a broken edit keeps the last good
 * state instead of dropping the tokens of the scope it protected (docs/access-rules.md).
 */
import { parseManifests } from './manifest.js';
import { API_GROUP, KIND, validateProtectedScope, type FieldError, type ProtectedScope } from './protected-scope.js';
import { err, ok, type Result } from './result.js';
import { isRecord } from '../lib/is-record.js';

interface ManifestDocument {
  /** The document as parsed. */
  readonly value: unknown;
  /** Set when the document is a ProtectedScope (it is then valid). */
  readonly object?: ProtectedScope;
}


/** The spec fields that make a document look like a ProtectedScope whatever its apiVersion and kind say. */
const SCOPE_SHAPE = ['topicHierarchy', 'metadataId', 'tokens'];
const PATH_SHAPE = /^(collections\/stations|processes\/)/i;

/**
 * Which documents must be valid ProtectedScopes. Objects of other kinds may share the directory (a GitOps
 * repository holds Namespaces, ConfigMaps...) and are skipped; but anything that claims our kind or our API
 * group, lacks a kind or an apiVersion, is not an object at all, or has a spec shaped like ours counts, so
 * a typo in `kind` or `apiVersion` (or both) cannot silently drop a scope and open it.
 */
export function isScopeDocument(doc: unknown): boolean {
  if (!isRecord(doc) || doc.kind === undefined || doc.kind === KIND || doc.apiVersion === undefined) return true;
  if (typeof doc.apiVersion === 'string' && doc.apiVersion.toLowerCase().startsWith(`${API_GROUP}/`)) return true;
  if (typeof doc.kind === 'string' && doc.kind.toLowerCase().includes('protectedscope')) return true;
  // A List (`kubectl get ps -o yaml`) holding ProtectedScopes is not read item by item: it is refused.
  if (Array.isArray(doc.items) && doc.items.some(isScopeDocument)) return true;
  const spec = doc.spec;
  if (!isRecord(spec)) return false;
  return SCOPE_SHAPE.some((f) => spec[f] !== undefined) || (typeof spec.path === 'string' && PATH_SHAPE.test(spec.path));
}

/** The file's documents, or why it is invalid: not YAML, or no document at all. */
export function readManifestDocuments(text: string): Result<unknown[], FieldError[]> {
  const parsed = parseManifests(text);
  if (!parsed.ok) return err([{ field: '', message: parsed.error }]);
  // An emptied file (0 bytes, `---`, `null`) is never how a scope goes away: that is deleting the file.
  if (parsed.value.length === 0) return err([{ field: '', message: 'holds no document (to remove a scope, delete its file)' }]);
  return parsed;
}

/** Document `i` of `count`: a valid ProtectedScope, an object of another kind, or its problems (fields prefixed `documents[i].` in a file of several). */
export function checkManifestDocument(value: unknown, i: number, count: number): Result<ManifestDocument, FieldError[]> {
  if (!isScopeDocument(value)) return ok({ value });
  const checked = validateProtectedScope(value);
  if (checked.ok) return ok({ value, object: checked.value });
  const where = count > 1 ? `documents[${i}]` : '';
  return err(checked.error.map((e) => ({ field: [where, e.field].filter((f) => f.length > 0).join('.') || '(document)', message: e.message })));
}

/** Every document of a file checked: all of them, or every problem found. */
export function readManifestFile(text: string): Result<ManifestDocument[], FieldError[]> {
  const docs = readManifestDocuments(text);
  if (!docs.ok) return docs;
  const out: ManifestDocument[] = [];
  const problems: FieldError[] = [];
  docs.value.forEach((value, i) => {
    const checked = checkManifestDocument(value, i, docs.value.length);
    if (checked.ok) out.push(checked.value);
    else problems.push(...checked.error);
  });
  return problems.length > 0 ? err(problems) : ok(out);
}

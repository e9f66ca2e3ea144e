/**
 * What `svc auth import` makes of a wis2box-auth store's rows, before anything is written: the scopes each topic
 * becomes, the token records they get, and every row that cannot be carried over as it protected.
 *
 * wis2box-auth closed a request when one of its topics was a substring of the raw request URI (`topic in
 * X-Original-URI`, the longest one governing). Its own paths (`processes/…`, `collections/stations`,
 * `wis2downloader`) and its two scope kinds (metadata ids, dotted topic hierarchies) map to a scope of the same
 * kind; they close exactly what they name and below, and what wis2box-auth closed beyond that by substring accident
 * (`…:obs` also closing `…:obs2`, `wis2downloaderx`) is the deliberate difference docs/wis2box.md lists. Any other
 * value (a bare word such as `mw-met`, or a path of another service) named data wherever it stood in a URL, so a
 * root path scope alone would open every file it closed below `/data`: a one-word topic is also written as a
 * one-level topic hierarchy (same records), which closes it as a whole segment under the WAF, as a `.`-level of an
 * API collection id, and at the root. The URL forms that no scope kind can express (the word as a `:`-part of a
 * metadata id, inside a longer segment, elsewhere in the URL) are listed per topic: the import refuses such rows
 * unless the operator accepts the narrower protection.
 */
import { formatImportedHash, DERIVED_KEY_BYTES, WIS2BOX_ITERATIONS } from './imported-hash.js';
import type { TokenRecord } from './protected-scope.js';
import { err, ok, type Result } from './result.js';
import { canonicalPath, DEFAULT_PREFIXES, type PathPrefixes } from './path-scope.js';
import { parseScope, scopeKey, TOPIC_PATTERN, type Scope } from './scope.js';
import { tokenIdOf } from './token.js';

/** One row of the `auth` table as the store reader gives it: values cut and typed, never larger than their bounds. */
export interface Wis2boxRow {
  /** 1-based position in the table, for messages. */
  readonly row: number;
  /** SQLite's typeof() of each column. */
  readonly topicType: string;
  /** The topic's first MAX_WIS2BOX_TOPIC_CHARS + 1 characters when it is text. */
  readonly topic: string | null;
  /** Characters of the whole topic (text), else 0. */
  readonly topicLength: number;
  readonly saltType: string;
  /** The salt when it is a blob of at most MAX_SALT_BYTES, else null. */
  readonly salt: Uint8Array | null;
  readonly saltLength: number;
  readonly keyType: string;
  readonly key: Uint8Array | null;
  readonly keyLength: number;
}

/** The longest topic a scope can come from (a scope value is at most 512 characters). */
export const MAX_WIS2BOX_TOPIC_CHARS = 512;
const MIN_SALT_BYTES = 8;
export const MAX_SALT_BYTES = 64;
const IMPORTED_DESCRIPTION = 'imported from wis2box-auth';

/** What a topic becomes: the scopes its rows go to, and the URL forms wis2box-auth closed that none of them closes. */
interface TopicImport {
  readonly scopes: readonly Scope[];
  readonly narrower: readonly string[];
}

const WIS2BOX_PATH = /^(wis2downloader(\/.*)?|processes\/.+|collections\/stations)$/;

/** A value shown in a message: quoted, escaped, and cut to 60 characters. */
export function shown(value: string): string {
  const quoted = JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  // JSON escapes C0 controls; format, private-use and unassigned characters (bidi overrides, say) are escaped too.
  return quoted.replace(/[\p{Cf}\p{Co}\p{Cn}\u0080-\u009f\u2028\u2029]/gu, (c) => `\\u${c.codePointAt(0)!.toString(16).padStart(4, '0')}`);
}

/** The scopes a wis2box-auth topic becomes (module comment), or why it becomes none. */
export function importOfWis2boxTopic(topic: string, prefixes: PathPrefixes = DEFAULT_PREFIXES): Result<TopicImport> {
  const value = topic.trim();
  if (value.length === 0) return err('an empty topic');
  if (value.startsWith('urn:')) return kept(parseScope('dataset', value));
  if (value.includes('.') && !value.includes('/')) return kept(parseScope('topic', value));
  const bare = value.replace(/^\/+|\/+$/g, '');
  // A path spelt below the API prefix (`oapi/processes/x`) is the special form svc writes (`processes/x`), or a form
  // no scope may take: never a path scope the CRD would refuse.
  const canonical = canonicalPath(bare, prefixes);
  if (!canonical.ok) return err(`fits no scope kind (${canonical.error})`);
  if (canonical.value !== bare) return kept(parseScope('path', canonical.value));
  if (WIS2BOX_PATH.test(bare)) return kept(parseScope('path', bare));
  const path = parseScope('path', bare);
  const oneWord = !bare.includes('/');
  const levels = oneWord && TOPIC_PATTERN.test(bare) ? parseScope('topic', bare) : undefined;
  const scopes = [path, levels].flatMap((s) => (s?.ok ? [s.value] : []));
  if (scopes.length === 0) return err(`fits no scope kind (${path.ok ? '' : path.error})`);
  return ok({ scopes, narrower: oneWord ? wordForms(bare, path.ok, levels?.ok === true) : pathForms(bare, path.ok) });
}

function kept(scope: Result<Scope>): Result<TopicImport> {
  return scope.ok ? ok({ scopes: [scope.value], narrower: [] }) : err(`fits no scope kind (${scope.error})`);
}

/** The URL forms wis2box-auth closed for a bare word that its path and topic hierarchy do not close. */
function wordForms(word: string, root: boolean, levels: boolean): string[] {
  return [
    `as a ":"-part of a metadata id (/oapi/collections/urn:…:${word}:…, /data/…/urn:…:${word}:…/…)`,
    `inside a longer segment or level (…/${word}-x/…, …/x${word}/…, /oapi/collections/x${word}.y, /data/…/${word}.x)`,
    `elsewhere below /oapi than a collection id (/oapi/collections/c/items/${word}, /oapi/processes/${word}…), below another path than /${word} (/other/${word}/…), or in the query (…?q=${word})`,
    ...(root ? [] : [`at the root (/${word}/…)`]),
    ...(levels ? [] : [`as a whole segment under /data or a level of a collection id (/data/…/${word}/…)`]),
  ];
}

/** The URL forms wis2box-auth closed for a path of another service that its root path scope does not close. */
function pathForms(path: string, root: boolean): string[] {
  return [
    `below any other path than the root (/data/…/${path}/…, /oapi/…/${path}, /other/${path})`,
    `inside longer segments (…/x${path}…, …/${path}x/…), or in the query (…?q=${path})`,
    ...(root ? [] : [`at the root (/${path}/…)`]),
  ];
}

/** Why a row cannot become a token record, or its hash. */
function rowHash(r: Wis2boxRow): Result<TokenRecord['hash']> {
  if (r.saltType !== 'blob' || r.keyType !== 'blob') return err(`salt and key must be blobs (bytes), not ${r.saltType} and ${r.keyType}`);
  if (r.saltLength < MIN_SALT_BYTES || r.saltLength > MAX_SALT_BYTES || r.salt === null) {
    return err(`a salt of ${r.saltLength} bytes (${MIN_SALT_BYTES} to ${MAX_SALT_BYTES} expected)`);
  }
  if (r.keyLength !== DERIVED_KEY_BYTES || r.key === null) return err(`a key of ${r.keyLength} bytes (${DERIVED_KEY_BYTES} expected)`);
  return ok(formatImportedHash(WIS2BOX_ITERATIONS, r.salt, r.key));
}

/** The row's topic as text within bounds, or why not. */
function rowTopic(r: Wis2boxRow): Result<string> {
  if (r.topicType === 'null' || r.topic === null) return err(r.topicType === 'null' ? 'the topic is NULL' : `the topic is not text but ${r.topicType}`);
  if (r.topicLength > MAX_WIS2BOX_TOPIC_CHARS) return err(`a topic of ${r.topicLength} characters (at most ${MAX_WIS2BOX_TOPIC_CHARS})`);
  return ok(r.topic);
}

export interface PlannedScope {
  readonly scope: Scope;
  /** The first topic that maps to it (for the report). */
  readonly topic: string;
  readonly records: TokenRecord[];
}

/** Rows that cannot be imported: the same topic (as shown) and reason, grouped. */
export interface UnusableRows {
  readonly topic: string;
  readonly rows: number[];
  readonly reason: string;
}

/** Rows whose topic keeps a narrower protection than wis2box-auth gave it. */
export interface NarrowerRows {
  readonly topic: string;
  readonly rows: number[];
  readonly scopes: readonly Scope[];
  readonly forms: readonly string[];
}

export interface ImportPlan {
  readonly scopes: PlannedScope[];
  readonly unusable: UnusableRows[];
  readonly narrower: NarrowerRows[];
}

/** Maps every row: pure, so a dry run and a real one plan the same. */
export function planWis2boxImport(rows: readonly Wis2boxRow[], createdAt: string, prefixes: PathPrefixes = DEFAULT_PREFIXES): ImportPlan {
  const scopes = new Map<string, PlannedScope>();
  const unusable = new Map<string, UnusableRows>();
  const narrower = new Map<string, NarrowerRows>();
  for (const r of rows) {
    const topic = rowTopic(r);
    const mapped = topic.ok ? importOfWis2boxTopic(topic.value, prefixes) : topic;
    const hash = rowHash(r);
    if (!mapped.ok || !hash.ok) {
      const reason = !mapped.ok ? mapped.error : hash.ok ? '' : hash.error;
      const shownTopic = r.topic === null ? `(${r.topicType})` : shown(r.topic);
      const group = unusable.get(`${shownTopic}\0${reason}`) ?? { topic: shownTopic, rows: [], reason };
      group.rows.push(r.row);
      unusable.set(`${shownTopic}\0${reason}`, group);
      continue;
    }
    const value = (topic as { value: string }).value;
    if (mapped.value.narrower.length > 0) {
      const n = narrower.get(value) ?? { topic: shown(value), rows: [], scopes: mapped.value.scopes, forms: mapped.value.narrower };
      n.rows.push(r.row);
      narrower.set(value, n);
    }
    for (const scope of mapped.value.scopes) {
      const entry = scopes.get(scopeKey(scope)) ?? { scope, topic: value, records: [] };
      if (!entry.records.some((x) => x.hash === hash.value)) entry.records.push({ id: tokenIdOf(hash.value), hash: hash.value, description: IMPORTED_DESCRIPTION, createdAt });
      scopes.set(scopeKey(scope), entry);
    }
  }
  return { scopes: [...scopes.values()], unusable: [...unusable.values()], narrower: [...narrower.values()] };
}

/** "rows 3, 7 and 9" (the first ten, then how many more). */
export function rowList(rows: readonly number[]): string {
  const head = rows.slice(0, 10).join(', ');
  const more = rows.length > 10 ? ` and ${rows.length - 10} more` : '';
  return `row${rows.length === 1 ? '' : 's'} ${head}${more}`;
}

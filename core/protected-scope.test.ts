import { describe, it, expect } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { parseManifests } from './manifest.js';
import {
  API_GROUP_VERSION,
  CONDITION_FIELDS,
  formatFieldErrors,
  isDateTime,
  isExpired,
  KIND,
  MAX_DESCRIPTION_LENGTH,
  MAX_NETWORKS_PER_OBJECT,
  MAX_TOKENS_PER_OBJECT,
  NETWORK_FIELDS,
  networksOf,
  newProtectedScope,
  orderedSpec,
  REQUIRED_SPEC_FIELDS,
  scopeOf,
  SPEC_FIELDS,
  STATUS_FIELDS,
  TOKEN_FIELDS,
  TOP_LEVEL_FIELDS,
  specFor,
  tokensOf,
  validateProtectedScope,
  withSpec,
  type FieldError,
  type TokenRecord,
} from './protected-scope.js';
import { MAX_CIDR_LENGTH } from './network.js';
import { HASH_PATTERN, hashToken, TOKEN_ID_PATTERN, tokenIdOf } from './token.js';
import { DATASET_PATTERN, MAX_LENGTH, PATH_PATTERN, TOPIC_PATTERN, type Scope } from './scope.js';

// docs/architecture.md "ProtectedScope": exactly one scope field, per-kind patterns, hash pattern, id = first
// 12 hex of the hash, unique ids, maxItems, RFC 3339 dates, bounded description. Errors name the field.

const record = (seed: string, extra: Partial<TokenRecord> = {}): TokenRecord => {
  const hash = hashToken(`token-${seed}`);
  return { id: tokenIdOf(hash), hash, createdAt: '2026-11-21T10:00:00Z', ...extra };
};
/** A manifest with `spec`; `tokens: []` unless the spec states its own (or `undefined` to leave it out). */
const object = (spec: Record<string, unknown>, name = 'topic-a-b-12345678') => ({
  apiVersion: API_GROUP_VERSION,
  kind: KIND,
  metadata: { name, namespace: 'svc' },
  spec: JSON.parse(JSON.stringify({ tokens: [], ...spec })) as Record<string, unknown>,
});
const errorsOf = (obj: unknown): FieldError[] => {
  const r = validateProtectedScope(obj);
  return r.ok ? [] : r.error;
};
const fields = (obj: unknown) => errorsOf(obj).map((e) => e.field);

describe('valid ProtectedScopes pass', () => {
  it.each([
    ['a topic with an empty token list', { topicHierarchy: 'origin.a.wis2.mw-met.data.core', tokens: [] }],
    ['a dataset with a token', { metadataId: 'urn:wmo:md:mw-met:obs', tokens: [record('1')] }],
    ['a process path', { path: 'processes/svc', tokens: [record('1'), record('2', { expiresAt: '2027-01-01T00:00:00Z', description: 'partner NMHS' })] }],
    ['collections/stations', { path: 'collections/stations', tokens: [record('1', { createdAt: '2026-11-21T10:00:00.123+01:00' })] }],
  ])('%s', (_what, spec) => {
    const obj = object(spec);
    expect(validateProtectedScope(obj)).toEqual({ ok: true, value: obj });
  });
  it(`exactly ${MAX_TOKENS_PER_OBJECT} tokens is allowed`, () => {
    const tokens = Array.from({ length: MAX_TOKENS_PER_OBJECT }, (_, i) => record(String(i)));
    expect(errorsOf(object({ topicHierarchy: 'a', tokens }))).toEqual([]);
  });
});

describe('each invalid case names its field', () => {
  it('two scope fields', () => {
    const errors = errorsOf(object({ topicHierarchy: 'a', path: 'processes/svc' }));
    expect(errors.map((e) => e.field)).toEqual(['spec']);
    expect(errors[0]!.message).toMatch(/exactly one.*topicHierarchy, path/);
  });
  it('three scope fields', () => {
    expect(fields(object({ topicHierarchy: 'a', metadataId: 'urn:a', path: 'processes/svc' }))).toEqual(['spec']);
  });
  it('no scope field', () => {
    const errors = errorsOf(object({ tokens: [] }));
    expect(errors.map((e) => e.field)).toEqual(['spec']);
    expect(errors[0]!.message).toMatch(/none/);
  });
  it('a null scope field counts as set and is not a string', () => {
    expect(fields(object({ topicHierarchy: null }))).toEqual(['spec.topicHierarchy']);
  });
  it.each([
    ['bad topic', { topicHierarchy: 'a..b' }, 'spec.topicHierarchy'],
    ['topic in slash form (manifests hold the canonical dotted form)', { topicHierarchy: 'a/b' }, 'spec.topicHierarchy'],
    ['topic not a string', { topicHierarchy: 5 }, 'spec.topicHierarchy'],
    ['bad URN', { metadataId: 'wmo:md:x' }, 'spec.metadataId'],
    ['bad path', { path: 'processes/svc/x' }, 'spec.path'],
    ['other collection', { path: 'collections/other' }, 'spec.path'],
  ])('%s', (_what, spec, field) => {
    expect(fields(object(spec))).toEqual([field]);
  });
  it.each([
    ['uppercase hex', `sha256:${'A'.repeat(64)}`],
    ['wrong algorithm', `md5:${'a'.repeat(64)}`],
    ['short', 'sha256:abc'],
    ['not a string', 42],
    ['plaintext', 'svc_something'],
  ])('bad hash: %s', (_what, hash) => {
    expect(fields(object({ topicHierarchy: 'a', tokens: [{ ...record('1'), hash }] }))).toEqual(['spec.tokens[0].hash']);
  });
  it('bad id pattern', () => {
    expect(fields(object({ topicHierarchy: 'a', tokens: [{ ...record('1'), id: 'XYZ' }] }))).toEqual(['spec.tokens[0].id']);
  });
  it('id not matching the hash', () => {
    const errors = errorsOf(object({ topicHierarchy: 'a', tokens: [record('0'), { ...record('1'), id: record('2').id }] }));
    expect(errors.map((e) => e.field)).toEqual(['spec.tokens[1].id']);
    expect(errors[0]!.message).toMatch(/first 12 hex of hash/);
  });
  it('duplicate ids', () => {
    const errors = errorsOf(object({ topicHierarchy: 'a', tokens: [record('1'), record('2'), record('1')] }));
    expect(errors.map((e) => e.field)).toEqual(['spec.tokens[2].id']);
    expect(errors[0]!.message).toMatch(/duplicate/);
  });
  it(`more than ${MAX_TOKENS_PER_OBJECT} tokens`, () => {
    const tokens = Array.from({ length: MAX_TOKENS_PER_OBJECT + 1 }, (_, i) => record(String(i)));
    expect(fields(object({ topicHierarchy: 'a', tokens }))).toEqual(['spec.tokens']);
  });
  it('tokens not a list / a token not an object', () => {
    expect(fields(object({ topicHierarchy: 'a', tokens: {} }))).toEqual(['spec.tokens']);
    expect(fields(object({ topicHierarchy: 'a', tokens: ['x'] }))).toEqual(['spec.tokens[0]']);
  });
  it.each([
    ['missing createdAt', { createdAt: undefined }, 'spec.tokens[0].createdAt'],
    ['date only', { createdAt: '2026-11-21' }, 'spec.tokens[0].createdAt'],
    ['no zone', { createdAt: '2026-11-21T10:00:00' }, 'spec.tokens[0].createdAt'],
    ['month 13', { createdAt: '2026-13-01T00:00:00Z' }, 'spec.tokens[0].createdAt'],
    ['February 30th', { createdAt: '2026-02-30T00:00:00Z' }, 'spec.tokens[0].createdAt'],
    ['February 29th of a common year', { createdAt: '2026-02-29T00:00:00Z' }, 'spec.tokens[0].createdAt'],
    ['April 31st', { expiresAt: '2027-04-31T00:00:00Z' }, 'spec.tokens[0].expiresAt'],
    ['day 0', { createdAt: '2026-01-00T00:00:00Z' }, 'spec.tokens[0].createdAt'],
    ['hour 24', { createdAt: '2026-01-01T24:00:00Z' }, 'spec.tokens[0].createdAt'],
    ['minute 60', { createdAt: '2026-01-01T10:60:00Z' }, 'spec.tokens[0].createdAt'],
    ['second 60', { createdAt: '2026-01-01T10:00:60Z' }, 'spec.tokens[0].createdAt'],
    ['offset +24:00', { createdAt: '2026-01-01T10:00:00+24:00' }, 'spec.tokens[0].createdAt'],
    ['a number', { createdAt: 1767261600000 }, 'spec.tokens[0].createdAt'],
    ['bad expiresAt', { expiresAt: 'tomorrow' }, 'spec.tokens[0].expiresAt'],
  ])('bad date: %s', (_what, extra, field) => {
    expect(fields(object({ topicHierarchy: 'a', tokens: [{ ...record('1'), ...extra }] }))).toEqual([field]);
  });
  it('long description', () => {
    expect(fields(object({ topicHierarchy: 'a', tokens: [record('1', { description: 'x'.repeat(256) })] }))).toEqual([]);
    expect(fields(object({ topicHierarchy: 'a', tokens: [record('1', { description: 'x'.repeat(257) })] }))).toEqual(['spec.tokens[0].description']);
    expect(fields(object({ topicHierarchy: 'a', tokens: [{ ...record('1'), description: 7 }] }))).toEqual(['spec.tokens[0].description']);
  });
  it('apiVersion, kind, metadata.name', () => {
    expect(fields({ ...object({ topicHierarchy: 'a' }), apiVersion: 'v1' })).toEqual(['apiVersion']);
    expect(fields({ ...object({ topicHierarchy: 'a' }), kind: 'ConfigMap' })).toEqual(['kind']);
    expect(fields(object({ topicHierarchy: 'a' }, 'Upper'))).toEqual(['metadata.name']);
    expect(fields(object({ topicHierarchy: 'a' }, 'a'.repeat(254)))).toEqual(['metadata.name']);
    expect(fields(object({ topicHierarchy: 'a' }, '-a'))).toEqual(['metadata.name']);
    expect(fields({ ...object({ topicHierarchy: 'a' }), metadata: 'x' })).toEqual(['metadata']);
  });
  it('not an object, or no spec', () => {
    expect(fields(null)).toEqual(['']);
    expect(fields([])).toEqual(['']);
    expect(fields({ apiVersion: API_GROUP_VERSION, kind: KIND, metadata: { name: 'x' } })).toEqual(['spec']);
  });
  it('reports every problem at once', () => {
    const errors = errorsOf({ apiVersion: 'x', kind: KIND, metadata: { name: 'ok' }, spec: { path: 'bad path', tokens: [{ id: 'x', hash: 'y', createdAt: 'z' }] } });
    expect(errors.map((e) => e.field)).toEqual(['apiVersion', 'spec.path', 'spec.tokens[0].id', 'spec.tokens[0].hash', 'spec.tokens[0].createdAt']);
    expect(formatFieldErrors(errors)).toMatch(/^apiVersion: .*; spec\.path: .*; spec\.tokens\[0\]\.id: /);
  });
});

describe('networks: canonical CIDRs, each once, at most 256', () => {
  const nets = (...cidrs: string[]) => cidrs.map((cidr) => ({ cidr }));
  it('valid: IPv4 and IPv6, with and without a description', () => {
    const obj = object({ topicHierarchy: 'a', networks: [{ cidr: '203.0.113.7/32', description: 'Global Cache' }, { cidr: '2001:db8::/32' }] });
    expect(errorsOf(obj)).toEqual([]);
    expect(networksOf(obj as never)).toEqual(obj.spec.networks);
    expect(networksOf(object({ topicHierarchy: 'a' }) as never)).toEqual([]);
    const many = Array.from({ length: MAX_NETWORKS_PER_OBJECT }, (_, i) => ({ cidr: `10.0.${i}.0/24` }));
    expect(errorsOf(object({ topicHierarchy: 'a', networks: many }))).toEqual([]);
  });
  it('a non-canonical cidr names the form to use', () => {
    const errors = errorsOf(object({ topicHierarchy: 'a', networks: nets('203.0.113.9/24') }));
    expect(errors).toEqual([{ field: 'spec.networks[0].cidr', message: '"203.0.113.9/24" has host bits set: use 203.0.113.0/24' }]);
    expect(errorsOf(object({ topicHierarchy: 'a', networks: nets('::ffff:203.0.113.0/120') }))[0]!.message).toMatch(/use 203\.0\.113\.0\/24/);
    expect(errorsOf(object({ topicHierarchy: 'a', networks: nets('203.0.113.7') }))[0]!.message).toMatch(/use 203\.0\.113\.7\/32/);
  });
  it.each([
    ['not a list', { networks: {} }, ['spec.networks']],
    ['an item not an object', { networks: ['203.0.113.0/24'] }, ['spec.networks[0]']],
    ['no cidr', { networks: [{ description: 'x' }] }, ['spec.networks[0].cidr']],
    ['a cidr not a string', { networks: [{ cidr: 7 }] }, ['spec.networks[0].cidr']],
    ['an over-long cidr', { networks: [{ cidr: '1'.repeat(65) }] }, ['spec.networks[0].cidr']],
    ['a duplicate', { networks: nets('203.0.113.0/24', '2001:db8::/32', '203.0.113.0/24') }, ['spec.networks[2].cidr']],
    ['a long description', { networks: [{ cidr: '203.0.113.0/24', description: 'x'.repeat(257) }] }, ['spec.networks[0].description']],
    ['an unknown field', { networks: [{ cidr: '203.0.113.0/24', comment: 'x' }] }, ['spec.networks[0].comment']],
    ['too many', { networks: Array.from({ length: MAX_NETWORKS_PER_OBJECT + 1 }, (_, i) => ({ cidr: `10.${i >> 8}.${i & 255}.0/24` })) }, ['spec.networks']],
    ['public with a network', { path: 'processes/x', topicHierarchy: undefined, public: true, networks: nets('203.0.113.0/24') }, ['spec.public']],
  ])('%s', (_what, spec, expected) => {
    expect(fields(object({ topicHierarchy: 'a', ...spec }))).toEqual(expected);
  });
  it('orderedSpec puts networks between subjects and public, their fields in NETWORK_FIELDS order', () => {
    const spec = orderedSpec({ public: false, networks: [{ description: 'd', cidr: '203.0.113.0/24' }], topicHierarchy: 'a', tokens: [], subjects: [] } as never);
    expect(Object.keys(spec)).toEqual(['topicHierarchy', 'tokens', 'subjects', 'networks', 'public']);
    expect(Object.keys(spec.networks![0]!)).toEqual([...NETWORK_FIELDS]);
    expect(Object.keys(specFor({ kind: 'topic', value: 'a' }, { public: false, networks: [], tokens: [] }))).toEqual(['topicHierarchy', 'tokens', 'networks', 'public']);
  });
});

describe('isDateTime (RFC 3339 as the API server accepts it)', () => {
  it.each(['2026-11-21T10:00:00Z', '2026-11-21t10:00:00z', '2024-02-29T23:59:59.999999+05:30', '2000-02-29T00:00:00-00:00', '2026-12-31T23:59:59Z'])('accepts %s', (v) => {
    expect(isDateTime(v)).toBe(true);
  });
  it.each(['1900-02-29T00:00:00Z', '2026-11-21 10:00:00Z', '2026-11-21T10:00Z', '26-11-21T10:00:00Z', '2026-11-21T10:00:00+0100', ''])('refuses %s', (v) => {
    expect(isDateTime(v)).toBe(false);
  });
});

describe('helpers', () => {
  const scopes: Scope[] = [
    { kind: 'topic', value: 'a.b' },
    { kind: 'dataset', value: 'urn:a' },
    { kind: 'path', value: 'processes/svc' },
  ];
  it.each(scopes)('specFor/scopeOf round-trip %j, and the built object validates', (scope) => {
    const tokens = [record('1')];
    const spec = specFor(scope, { tokens });
    expect(scopeOf(spec)).toEqual(scope);
    const ps = newProtectedScope(scope, 'x-1', 'svc', tokens);
    expect(validateProtectedScope(ps).ok).toBe(true);
    expect(tokensOf(ps)).toEqual(tokens);
    expect(newProtectedScope(scope, 'x-1', undefined, []).metadata).toEqual({ name: 'x-1' });
  });
  it('specFor states the scope field first, then the given fields in SPEC_FIELDS order, and no undefined one', () => {
    const spec = specFor({ kind: 'path', value: 'processes/svc' }, { public: undefined, closed: true, tokens: [] });
    expect(Object.keys(spec)).toEqual(['path', 'tokens', 'closed']);
  });
  it('withSpec changes the given fields, drops the ones given as undefined, keeps the scope and every other field in its place', () => {
    const read = validateProtectedScope(object({ tokens: [record('1')], closed: true, topicHierarchy: 'a.b', subjects: [{ kind: 'User', name: 'alice' }] }));
    if (!read.ok) throw new Error(formatFieldErrors(read.error));
    const handWritten = read.value;
    const edited = withSpec(handWritten, { tokens: [], closed: undefined });
    expect(Object.keys(edited.spec)).toEqual(['tokens', 'topicHierarchy', 'subjects']);
    expect(edited.spec).toEqual({ tokens: [], topicHierarchy: 'a.b', subjects: [{ kind: 'User', name: 'alice' }] });
    expect(edited.metadata).toBe(handWritten.metadata);
    expect(handWritten.spec.closed).toBe(true);
    expect(withSpec(handWritten, { public: undefined }).spec).toEqual(handWritten.spec);
  });
  it('tokensOf defaults to none (an object stored before tokens had to be stated)', () => {
    expect(tokensOf(object({ topicHierarchy: 'a', tokens: undefined }) as never)).toEqual([]);
  });
  it('isExpired: at the instant of expiry and after; never without expiry', () => {
    const at = Date.parse('2027-01-01T00:00:00Z');
    expect(isExpired({ expiresAt: '2027-01-01T00:00:00Z' }, at - 1)).toBe(false);
    expect(isExpired({ expiresAt: '2027-01-01T00:00:00Z' }, at)).toBe(true);
    expect(isExpired({ expiresAt: '2027-01-01T01:00:00+01:00' }, at)).toBe(true);
    expect(isExpired({}, Number.MAX_SAFE_INTEGER)).toBe(false);
  });
});

describe('strict: a field the schema does not know, or tokens not stated, is an error (never "no tokens")', () => {
  it('closed is a boolean', () => {
    expect(fields(object({ topicHierarchy: 'a', tokens: [], closed: true }))).toEqual([]);
    expect(fields(object({ topicHierarchy: 'a', tokens: [], closed: false }))).toEqual([]);
    expect(fields(object({ topicHierarchy: 'a', tokens: [], closed: 'yes' }))).toEqual(['spec.closed']);
  });
  it('tokens must be stated; an empty list is a statement', () => {
    expect(fields(object({ topicHierarchy: 'a', tokens: undefined }))).toEqual(['spec.tokens']);
    expect(fields(object({ topicHierarchy: 'a', tokens: [] }))).toEqual([]);
    expect(fields(object({ topicHierarchy: 'a', tokens: null }))).toEqual(['spec.tokens']);
  });
  it.each([
    ['a misspelt tokens key', { spec: { topicHierarchy: 'a', tokenz: [record('1')] } }, ['spec.tokenz', 'spec.tokens']],
    ['an unknown spec field', { spec: { topicHierarchy: 'a', tokens: [], closedd: true } }, ['spec.closedd']],
    ['an unknown top-level field', { spec: { topicHierarchy: 'a', tokens: [] }, data: {} }, ['data']],
    ['an unknown metadata field', { metadata: { name: 'x', nmespace: 'svc' }, spec: { topicHierarchy: 'a', tokens: [] } }, ['metadata.nmespace']],
    ['an unknown token field', { spec: { topicHierarchy: 'a', tokens: [{ ...record('1'), expires: '2020-01-01T00:00:00Z' }] } }, ['spec.tokens[0].expires']],
    ['an unknown status field', { spec: { topicHierarchy: 'a', tokens: [] }, status: { state: 'Open', tokenz: 1 } }, ['status.tokenz']],
    ['an unknown condition field', { spec: { topicHierarchy: 'a', tokens: [] }, status: { conditions: [{ type: 'Ready', statuz: 'True' }] } }, ['status.conditions[0].statuz']],
  ])('%s', (_what, parts, expected) => {
    const obj = { apiVersion: API_GROUP_VERSION, kind: KIND, metadata: { name: 'x' }, ...parts };
    expect(fields(obj)).toEqual(expected);
    expect(errorsOf(obj)[0]!.message).toMatch(/unknown field|must be stated/);
  });
  it('every ObjectMeta field the API server returns is known', () => {
    const meta = {
      name: 'x', namespace: 'svc', uid: 'u', resourceVersion: '1', generation: 1, creationTimestamp: '2026-11-21T10:00:00Z',
      labels: {}, annotations: {}, finalizers: [], managedFields: [], ownerReferences: [], generateName: 'x-',
      deletionTimestamp: '2026-11-21T10:00:00Z', deletionGracePeriodSeconds: 0, selfLink: '',
    };
    expect(fields({ apiVersion: API_GROUP_VERSION, kind: KIND, metadata: meta, spec: { path: 'processes/svc', tokens: [] } })).toEqual([]);
  });
});

describe('core validates with the same rules as the CRD (crds/protectedscope.yaml)', () => {
  type Schema = { properties: Record<string, Schema>; pattern?: string; maxLength?: number; maxItems?: number; items: Schema; required?: string[] };
  const crd = parseManifests(readFileSync(new URL('../crds/protectedscope.yaml', import.meta.url), 'utf8'));
  const spec = (): Schema => {
    if (!crd.ok) throw new Error(crd.error);
    const doc = crd.value[0] as { spec: { versions: { name: string; schema: { openAPIV3Schema: Schema } }[] } };
    return doc.spec.versions.find((v) => v.name === 'v1alpha1')!.schema.openAPIV3Schema.properties.spec!;
  };
  it('scope patterns and lengths', () => {
    const p = spec().properties;
    // Compared as compiled regexes (JS escapes "/" in a RegExp's source, YAML need not).
    const source = (pattern: string | undefined) => new RegExp(pattern ?? '').source;
    expect([p.topicHierarchy!.pattern, p.metadataId!.pattern, p.path!.pattern].map(source)).toEqual([TOPIC_PATTERN.source, DATASET_PATTERN.source, PATH_PATTERN.source]);
    expect([p.topicHierarchy!.maxLength, p.metadataId!.maxLength, p.path!.maxLength]).toEqual([MAX_LENGTH.topic, MAX_LENGTH.dataset, MAX_LENGTH.path]);
  });
  it('the fields of each level, and which spec fields are required (strict field validation refuses the rest)', () => {
    const crd2 = crd.ok ? (crd.value[0] as { spec: { versions: { name: string; schema: { openAPIV3Schema: Schema } }[] } }) : undefined;
    const root = crd2!.spec.versions.find((v) => v.name === 'v1alpha1')!.schema.openAPIV3Schema;
    const keys = (s: Schema) => Object.keys(s.properties).sort();
    expect(keys(root)).toEqual([...TOP_LEVEL_FIELDS].sort());
    expect(keys(spec())).toEqual([...SPEC_FIELDS].sort());
    expect([...(spec().required ?? [])].sort()).toEqual([...REQUIRED_SPEC_FIELDS].sort());
    expect(keys(spec().properties.tokens!.items)).toEqual([...TOKEN_FIELDS].sort());
    expect(keys(spec().properties.networks!.items)).toEqual([...NETWORK_FIELDS].sort());
    expect(keys(root.properties.status!)).toEqual([...STATUS_FIELDS].sort());
    expect(keys(root.properties.status!.properties.conditions!.items)).toEqual([...CONDITION_FIELDS].sort());
  });
  it('token records', () => {
    const tokens = spec().properties.tokens!;
    expect(tokens.maxItems).toBe(MAX_TOKENS_PER_OBJECT);
    const t = tokens.items.properties;
    expect(new RegExp(t.id!.pattern!).source).toBe(TOKEN_ID_PATTERN.source);
    expect(new RegExp(t.hash!.pattern!).source).toBe(HASH_PATTERN.source);
    expect(t.description!.maxLength).toBe(MAX_DESCRIPTION_LENGTH);
    expect([...(tokens.items.required ?? [])].sort()).toEqual(['createdAt', 'hash', 'id']);
  });
  it('network records', () => {
    const networks = spec().properties.networks!;
    expect(networks.maxItems).toBe(MAX_NETWORKS_PER_OBJECT);
    expect(networks.items.properties.cidr!.maxLength).toBe(MAX_CIDR_LENGTH);
    expect(networks.items.properties.description!.maxLength).toBe(MAX_DESCRIPTION_LENGTH);
    expect(networks.items.required).toEqual(['cidr']);
  });
});

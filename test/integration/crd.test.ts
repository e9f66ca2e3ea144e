// The ProtectedScope CRD (crds/protectedscope.yaml) against a real kube-apiserver: what it accepts, what it rejects
// and with which message, and what `kubectl get ps` prints.
import { createHash, randomBytes } from 'node:crypto';
import { request } from 'node:https';
import { beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { describeCluster, kubeConfig, newNamespace } from '../controlplane/testenv.js';
import { publicRefusal, refusedPathForm, validateProtectedScope } from '../../core/index.js';

const group = 'auth.svc.io';
const version = 'v1alpha1';
const plural = 'protectedscopes';

interface TokenRecord {
  id: string;
  hash: string;
  createdAt: string;
  description?: string;
  expiresAt?: string;
}

function token(extra: Partial<TokenRecord> = {}): TokenRecord {
  const hex = createHash('sha256').update(randomBytes(32)).digest('hex');
  return { id: hex.slice(0, 12), hash: `sha256:${hex}`, createdAt: '2026-11-21T10:00:00Z', ...extra };
}

let counter = 0;
function scope(spec: Record<string, unknown>, name = `ps-${++counter}`): Record<string, unknown> {
  return { apiVersion: `${group}/${version}`, kind: 'ProtectedScope', metadata: { name }, spec };
}

describeCluster('ProtectedScope CRD', () => {
  let kc: k8s.KubeConfig;
  let objects: k8s.CustomObjectsApi;
  let namespace: string;

  beforeAll(async () => {
    kc = kubeConfig();
    objects = kc.makeApiClient(k8s.CustomObjectsApi);
    namespace = await newNamespace('crd');
  });

  const create = (body: Record<string, unknown>) => objects.createNamespacedCustomObject({ group, version, namespace, plural, body });

  /** Creates `body` expecting a 422 and returns the server's message. */
  async function rejection(body: Record<string, unknown>): Promise<string> {
    try {
      await create(body);
    } catch (e) {
      const err = e as { code?: number; body?: string };
      expect(err.code).toBe(422);
      return (JSON.parse(err.body ?? '{}') as { message?: string }).message ?? '';
    }
    throw new Error(`accepted, but expected a rejection: ${JSON.stringify(body)}`);
  }

  describe('accepts', () => {
    it.each([
      ['a topic hierarchy', { topicHierarchy: 'origin.a.wis2.mw-met.data.core' }],
      ['a one-level topic', { topicHierarchy: 'origin' }],
      ['a metadata id', { metadataId: 'urn:wmo:md:mw-met:core.surface-based-observations.synop' }],
      ['the stations collection', { path: 'collections/stations' }],
      ['a process', { path: 'processes/svc-publish_v2' }],
      ['a prefix path', { path: 'wis2downloader' }],
      ['a deeper prefix path', { path: 'wis2downloader/subscriptions.v1' }],
      ['a public process', { path: 'processes/station-info', public: true }],
      ['a closed path at the API prefix', { path: 'oapi', closed: true }],
      ['a public path below the API prefix\'s jobs', { path: 'oapi/jobs', public: true }],
      ['a path that only starts like the API prefix', { path: 'oapix/processes/x' }],
      ['public: false with a token-less topic', { topicHierarchy: 'a.b', public: false }],
    ])('%s with an empty token list (tokens: [] is kept as stated)', async (_label, spec) => {
      const created = await create(scope({ ...spec, tokens: [] })) as { spec: Record<string, unknown> };
      expect(created.spec).toEqual({ ...spec, tokens: [] });
    });

    it('tokens with and without description and expiry', async () => {
      const tokens = [
        token(),
        token({ description: 'partner NMHS' }),
        token({ expiresAt: '2027-01-01T00:00:00Z' }),
        token({ description: 'x'.repeat(256), expiresAt: '2027-01-01T00:00:00.5+02:00' }),
      ];
      for (const spec of [{ topicHierarchy: 'origin.a.wis2' }, { metadataId: 'urn:x:y' }, { path: 'processes/svc-ingest' }]) {
        const created = await create(scope({ ...spec, tokens })) as { spec: { tokens: TokenRecord[] } };
        expect(created.spec.tokens).toHaveLength(tokens.length);
      }
    });

    it('imported (wis2box-auth) PBKDF2 hashes next to SHA-256 ones, their id the first 12 hex of the key', async () => {
      const key = randomBytes(32).toString('hex');
      const imported = { id: key.slice(0, 12), hash: `pbkdf2-sha256:100000:${randomBytes(24).toString('hex')}:${key}`, createdAt: '2026-11-21T10:00:00Z', description: 'imported from wis2box-auth' };
      const created = await create(scope({ path: 'wis2downloader', tokens: [imported, token()] })) as { spec: { tokens: TokenRecord[] } };
      expect(created.spec.tokens[0]).toEqual(imported);
      // At most 600000 iterations: the bound itself is accepted.
      const costliest = { ...imported, hash: imported.hash.replace(':100000:', ':600000:') };
      expect(((await create(scope({ path: 'wis2downloader', tokens: [costliest] }))) as { spec: { tokens: TokenRecord[] } }).spec.tokens[0]).toEqual(costliest);
      expect(validateProtectedScope(scope({ path: 'wis2downloader', tokens: [imported] })).ok).toBe(true);
    });

    it('the maximum of 1000 tokens', async () => {
      const tokens = Array.from({ length: 1000 }, () => token());
      await create(scope({ topicHierarchy: 'big', tokens }));
    });

    it('subjects: users and groups, as a RoleBinding names them', async () => {
      const subjects = [{ kind: 'User', name: 'alice@example.org' }, { kind: 'Group', name: 'wis2-ops' }];
      const created = await create(scope({ topicHierarchy: 'origin.a', tokens: [], subjects })) as { spec: { subjects: unknown } };
      expect(created.spec.subjects).toEqual(subjects);
    });

    it('networks: IPv4 and IPv6 in canonical form, with and without a description, as core reads them', async () => {
      const networks = [
        { cidr: '203.0.113.7/32', description: 'Global Cache' }, { cidr: '198.51.100.0/24' }, { cidr: '0.0.0.0/0' }, { cidr: '2001:db8::/32' },
        { cidr: '2001:db8::7/128' }, { cidr: '::/0' }, { cidr: 'fe80::/10' }, { cidr: '1::2:0:0:3/128' }, { cidr: '::102:304/128' },
      ];
      const created = await create(scope({ path: 'data', tokens: [], networks })) as { spec: { networks: unknown } };
      expect(created.spec.networks).toEqual(networks);
      expect(validateProtectedScope(scope({ path: 'data', tokens: [], networks })).ok).toBe(true);
    });

    it('the maximum of 256 networks', async () => {
      const networks = Array.from({ length: 256 }, (_, i) => ({ cidr: `10.${i}.0.0/16`, description: `network ${i}` }));
      await create(scope({ topicHierarchy: 'many', tokens: [], networks }));
    });

    it('tokens not stated: defaulted to [] (server-side apply drops a list its manager emptied)', async () => {
      const created = await create(scope({ topicHierarchy: 'a.b' })) as { spec: Record<string, unknown> };
      expect(created.spec).toEqual({ topicHierarchy: 'a.b', tokens: [] });
    });

    it('the last token revoked by server-side apply, as Flux and Argo CD apply a Git change', async () => {
      const name = `ps-ssa-${++counter}`;
      const apply = (tokens: TokenRecord[]) => objects.patchNamespacedCustomObject(
        { group, version, namespace, plural, name, body: scope({ topicHierarchy: 'origin.a.wis2.ssa.data.core', tokens }, name), fieldManager: 'gitops', force: true },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.ServerSideApply),
      ) as Promise<{ spec: { tokens: TokenRecord[] } }>;
      expect((await apply([token()])).spec.tokens).toHaveLength(1);
      expect((await apply([])).spec.tokens).toEqual([]);
    });

    it('adding and removing tokens on update (the scope unchanged)', async () => {
      const name = `ps-update-${++counter}`;
      await create(scope({ path: 'collections/stations', tokens: [token()] }, name));
      const current = await objects.getNamespacedCustomObject({ group, version, namespace, plural, name }) as Record<string, unknown> & { spec: { tokens: TokenRecord[] } };
      current.spec.tokens = [token(), token()];
      const replaced = await objects.replaceNamespacedCustomObject({ group, version, namespace, plural, name, body: current }) as { spec: { tokens: TokenRecord[] } };
      expect(replaced.spec.tokens).toHaveLength(2);
    });
  });

  describe('rejects', () => {

    it('an unknown field under strict field validation (what kubectl sends), as core does', async () => {
      let message = '';
      try {
        await objects.createNamespacedCustomObject({ group, version, namespace, plural, body: scope({ topicHierarchy: 'a.b', tokens: [], tokenz: [token()] }), fieldValidation: 'Strict' });
      } catch (e) {
        message = (JSON.parse((e as { body?: string }).body ?? '{}') as { message?: string }).message ?? '';
      }
      expect(message).toMatch(/unknown field "spec\.tokenz"/);
    });

    it('two scope fields', async () => {
      const msg = await rejection(scope({ topicHierarchy: 'a.b', path: 'collections/stations', tokens: [] }));
      expect(msg).toContain('exactly one of spec.topicHierarchy, spec.metadataId or spec.path must be set');
    });

    it('all three scope fields', async () => {
      const msg = await rejection(scope({ topicHierarchy: 'a.b', metadataId: 'urn:a', path: 'collections/stations', tokens: [] }));
      expect(msg).toContain('exactly one of spec.topicHierarchy, spec.metadataId or spec.path');
    });

    it('no scope field', async () => {
      const msg = await rejection(scope({ tokens: [token()] }));
      expect(msg).toContain('exactly one of spec.topicHierarchy, spec.metadataId or spec.path');
    });

    it('no spec at all', async () => {
      const msg = await rejection({ apiVersion: `${group}/${version}`, kind: 'ProtectedScope', metadata: { name: `ps-${++counter}` } });
      expect(msg).toMatch(/spec: Required value/);
    });

    it.each(['a..b', 'a/b', '.a', 'a.', 'a b', '', 'a.b#c', 'x'.repeat(513)])('topic %j', async (topic) => {
      const msg = await rejection(scope({ topicHierarchy: topic }));
      expect(msg).toContain('spec.topicHierarchy');
    });

    it.each(['urn:', 'foo:bar', 'urn', 'urn::x', 'urn:a:', 'urn:a/b', 'URN:a', `urn:${'x'.repeat(510)}`])('metadata id %j', async (id) => {
      const msg = await rejection(scope({ metadataId: id }));
      expect(msg).toContain('spec.metadataId');
    });

    it.each(['processes/', 'processes/svc-', 'collections/other', 'collections/stations/items', 'processes/a--b',
      'processes/-a', '/processes/a', 'processes/a.b', `processes/${'a'.repeat(247)}`, 'Processes/x.y',
      '.hidden', 'wis2downloader/../x', 'wis2downloader/', 'a//b', `${'a'.repeat(257)}`])('path %j', async (path) => {
      // tokens: [] stated, so the CEL rules run too (the server skips them while a required field is missing).
      const msg = await rejection(scope({ path, tokens: [] }));
      expect(msg).toContain('spec.path');
      expect(validateProtectedScope(scope({ path, tokens: [] })).ok).toBe(false);
    });

    it.each(['oapi/processes/svc', 'OAPI/Processes/svc-x', 'oapi/processes', 'oapi/collections/stations', 'Oapi/Collections/Stations/items', 'oapi/collections/urn:x', 'oapi/collections'])(
      'path %j below the API prefix\'s processes/ or collections/ (the special forms govern it; core flags one already stored)',
      async (path) => {
        const msg = await rejection(scope({ path, tokens: [] }));
        expect(msg).toContain('spec.path');
        expect(msg).toMatch(/names what the special forms govern|a path is|should match/);
        expect(refusedPathForm(path)).toBeDefined();
        // The URL form is refused by the pattern (no leading "/").
        expect(await rejection(scope({ path: `/${path}`, tokens: [] }))).toContain('spec.path');
      },
    );

    it.each(['oapi', 'OAPI', 'data', 'Data'])('public on %j, at or above a prefix (closing it is fine; core refuses public the same way)', async (path) => {
      const msg = await rejection(scope({ path, public: true, tokens: [] }));
      expect(msg).toContain('a path at or above the prefix /oapi or /data may be closed, never public');
      expect(publicRefusal(path)).toBeDefined();
    });

    it.each([
      ['tokens', { path: 'processes/station-info', public: true, tokens: [token()] }],
      ['subjects', { path: 'processes/station-info', public: true, tokens: [], subjects: [{ kind: 'User', name: 'a' }] }],
      ['closed: true', { path: 'processes/station-info', public: true, closed: true, tokens: [] }],
      ['networks', { path: 'processes/station-info', public: true, tokens: [], networks: [{ cidr: '203.0.113.7/32' }] }],
      ['a topic', { topicHierarchy: 'a.b', public: true, tokens: [] }],
      ['a metadata id', { metadataId: 'urn:a:b', public: true, tokens: [] }],
    ])('public with %s (core refuses it the same way)', async (_label, spec) => {
      const msg = await rejection(scope(spec));
      expect(msg).toContain('public is only for a path scope without tokens, subjects, networks or closed: true');
      expect(validateProtectedScope(scope(spec)).ok).toBe(false);
    });

    it.each([
      ['an id that is not the start of the key', (h: string) => ({ id: h.slice(7, 19), hash: h })],
      ['a 31-byte key', (h: string) => ({ id: h.slice(-62, -50), hash: h.slice(0, -2) })],
      ['a 7-byte salt', (h: string) => ({ id: h.slice(-64, -52), hash: h.replace(/:([0-9a-f]{48}):/, (_m, salt: string) => `:${salt.slice(0, 14)}:`) })],
      ['zero iterations', (h: string) => ({ id: h.slice(-64, -52), hash: h.replace(':100000:', ':0:') })],
      ['600001 iterations (above OWASP\'s 600000 for PBKDF2-SHA256)', (h: string) => ({ id: h.slice(-64, -52), hash: h.replace(':100000:', ':600001:') })],
      ['9999999 iterations', (h: string) => ({ id: h.slice(-64, -52), hash: h.replace(':100000:', ':9999999:') })],
      ['upper-case hex', (h: string) => ({ id: h.slice(-64, -52), hash: h.toUpperCase().replace('PBKDF2-SHA256', 'pbkdf2-sha256') })],
    ])('an imported hash with %s', async (_label, make) => {
      const hash = `pbkdf2-sha256:100000:${randomBytes(24).toString('hex')}:${randomBytes(32).toString('hex')}`;
      const msg = await rejection(scope({ path: 'wis2downloader', tokens: [{ ...make(hash), createdAt: '2026-11-21T10:00:00Z' }] }));
      expect(msg).toMatch(/spec\.tokens\[0\]\.(id|hash)/);
    });

    it.each([
      ['sha256 in upper case', (t: TokenRecord) => ({ ...t, hash: t.hash.toUpperCase().replace('SHA256', 'sha256'), id: t.id.toUpperCase() })],
      ['no prefix', (t: TokenRecord) => ({ ...t, hash: t.hash.slice(7) })],
      ['a short hash', (t: TokenRecord) => ({ ...t, hash: t.hash.slice(0, 70) })],
      ['another algorithm', (t: TokenRecord) => ({ ...t, hash: t.hash.replace('sha256', 'sha512') })],
    ])('a bad hash: %s', async (_label, mutate) => {
      const msg = await rejection(scope({ topicHierarchy: 'a', tokens: [mutate(token())] }));
      expect(msg).toContain('spec.tokens[0].hash');
    });

    it('a bad id', async () => {
      const msg = await rejection(scope({ topicHierarchy: 'a', tokens: [{ ...token(), id: 'xyz' }] }));
      expect(msg).toContain('spec.tokens[0].id');
    });

    it('an id that is not the first 12 hex of the hash', async () => {
      const t = token();
      const msg = await rejection(scope({ topicHierarchy: 'a', tokens: [token(), { ...t, id: token().id }] }));
      expect(msg).toContain('spec.tokens[1].id');
      expect(msg).toContain('id must be the first 12 hex of hash');
    });

    it('duplicate token ids', async () => {
      const t = token();
      const msg = await rejection(scope({ topicHierarchy: 'a', tokens: [t, token(), { ...t, description: 'again' }] }));
      expect(msg).toMatch(/spec\.tokens\[2\]: Duplicate value/);
    });

    it.each([
      ['an unknown kind', [{ kind: 'ServiceAccount', name: 'x' }], 'spec.subjects[0].kind: Unsupported value'],
      ['an empty name', [{ kind: 'User', name: '' }], 'spec.subjects[0].name'],
      ['a control character in a name', [{ kind: 'User', name: 'a\u0007b' }], 'spec.subjects[0].name'],
      ['a duplicate', [{ kind: 'Group', name: 'g' }, { kind: 'Group', name: 'g' }], 'spec.subjects[1]: Duplicate value'],
    ])('a subject with %s (core refuses it the same way)', async (_label, subjects, message) => {
      const body = scope({ topicHierarchy: 'a', tokens: [], subjects });
      expect(await rejection(body)).toContain(message);
      expect(validateProtectedScope(body).ok).toBe(false);
    });

    it.each([
      ['host bits set', '203.0.113.9/24', 'cidr must be in canonical form'],
      ['IPv6 host bits set', '2001:db8::1/32', 'cidr must be in canonical form'],
      ['upper-case IPv6', '2001:DB8::/32', 'cidr must be in canonical form'],
      ['IPv6 groups with leading zeros', '2001:0db8::/32', 'cidr must be in canonical form'],
      ['IPv6 not compressed', '2001:db8:0:0:0:0:0:0/32', 'cidr must be in canonical form'],
      ['a second-longest zero run compressed', '1::2:0:0:0:3/128', 'cidr must be in canonical form'],
      ['an IPv4 tail', '::1.2.3.4/128', 'cidr must be in canonical form'],
      ['a prefix with a leading zero', '203.0.113.0/024', 'cidr must be'],
      ['IPv4-mapped IPv6', '::ffff:203.0.113.0/120', 'cidr must be a network ADDRESS/PREFIX'],
      ['a bare address', '203.0.113.7', 'cidr must be a network ADDRESS/PREFIX'],
      ['leading zeros in IPv4', '010.0.0.0/8', 'cidr must be a network ADDRESS/PREFIX'],
      ['a prefix too long', '203.0.113.0/33', 'cidr must be a network ADDRESS/PREFIX'],
      ['a zone', 'fe80::%eth0/64', 'cidr must be a network ADDRESS/PREFIX'],
      ['no network', 'gateway', 'cidr must be a network ADDRESS/PREFIX'],
    ])('a network with %s (core refuses it the same way, naming the form to use)', async (_label, cidr, message) => {
      const body = scope({ topicHierarchy: 'a', tokens: [], networks: [{ cidr }] });
      const msg = await rejection(body);
      expect(msg).toContain('spec.networks[0].cidr');
      expect(msg).toContain(message);
      expect(validateProtectedScope(body).ok).toBe(false);
    });

    it.each([
      ['a duplicate', [{ cidr: '203.0.113.0/24' }, { cidr: '203.0.113.0/24', description: 'again' }], 'spec.networks[1]: Duplicate value'],
      ['no cidr', [{ description: 'x' }], 'spec.networks[0].cidr: Required value'],
      ['a long description', [{ cidr: '203.0.113.0/24', description: 'x'.repeat(257) }], 'spec.networks[0].description'],
      ['more than 256', Array.from({ length: 257 }, (_, i) => ({ cidr: `10.${i >> 8}.${i & 255}.0/24` })), 'spec.networks: Too many: 257: must have at most 256 items'],
    ])('networks with %s (core refuses them the same way)', async (_label, networks, message) => {
      const body = scope({ topicHierarchy: 'a', tokens: [], networks });
      expect(await rejection(body)).toContain(message);
      expect(validateProtectedScope(body).ok).toBe(false);
    });

    it('more than 1000 tokens', async () => {
      const msg = await rejection(scope({ topicHierarchy: 'a', tokens: Array.from({ length: 1001 }, () => token()) }));
      expect(msg).toMatch(/spec\.tokens: Too many: 1001: must have at most 1000 items/);
    });

    it.each([
      ['id', { id: undefined }],
      ['hash', { hash: undefined }],
      ['createdAt', { createdAt: undefined }],
    ])('a token without %s', async (field, patch) => {
      const msg = await rejection(scope({ topicHierarchy: 'a', tokens: [{ ...token(), ...patch }] }));
      expect(msg).toContain(`spec.tokens[0].${field}: Required value`);
    });

    it.each([
      ['createdAt', { createdAt: 'yesterday' }],
      ['expiresAt', { expiresAt: '2027-01-01' }],
      ['description', { description: 'x'.repeat(257) }],
    ])('a bad %s', async (field, patch) => {
      const msg = await rejection(scope({ topicHierarchy: 'a', tokens: [token(patch)] }));
      expect(msg).toContain(`spec.tokens[0].${field}`);
    });

    describe('a scope change on update', () => {
      it.each([
        ['another topic', { topicHierarchy: 'a.b' }, { topicHierarchy: 'a.c' }],
        ['topic to path', { topicHierarchy: 'a.b' }, { path: 'collections/stations' }],
        ['metadata id to topic', { metadataId: 'urn:a:b' }, { topicHierarchy: 'a.b' }],
        ['another process', { path: 'processes/svc-a' }, { path: 'processes/svc-b' }],
      ])('%s', async (_label, before, after) => {
        const name = `ps-immutable-${++counter}`;
        const tokens = [token()];
        await create(scope({ ...before, tokens }, name));
        const current = await objects.getNamespacedCustomObject({ group, version, namespace, plural, name }) as Record<string, unknown>;
        let message = '';
        try {
          await objects.replaceNamespacedCustomObject({ group, version, namespace, plural, name, body: { ...current, spec: { ...after, tokens } } });
        } catch (e) {
          const err = e as { code?: number; body?: string };
          expect(err.code).toBe(422);
          message = (JSON.parse(err.body ?? '{}') as { message?: string }).message ?? '';
        }
        expect(message).toContain('scope is immutable: create a new ProtectedScope');
        expect(message).toContain('spec');
        // a JSON merge patch fares no better
        let patchCode: number | undefined;
        try {
          await objects.patchNamespacedCustomObject({ group, version, namespace, plural, name, body: { spec: after } },
            k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch));
        } catch (e) {
          patchCode = (e as { code?: number }).code;
        }
        expect(patchCode).toBe(422);
      });
    });
  });

  describe('kubectl get ps', () => {
    /** The Table the API server renders for `kubectl get` (what kubectl prints, without needing kubectl). */
    async function table(): Promise<{ columnDefinitions: { name: string; priority: number }[]; rows: { cells: unknown[] }[] }> {
      const cluster = kc.getCurrentCluster();
      if (!cluster) throw new Error('no cluster');
      const url = new URL(`${cluster.server}/apis/${group}/${version}/namespaces/${namespace}/${plural}?labelSelector=printer%3Dyes`);
      const opts: import('node:https').RequestOptions = {
        method: 'GET',
        hostname: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        headers: { Accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' },
      };
      await kc.applyToHTTPSOptions(opts);
      return new Promise((ok, fail) => {
        const req = request(opts, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => { body += c; });
          res.on('end', () => (res.statusCode === 200 ? ok(JSON.parse(body)) : fail(new Error(`${res.statusCode}: ${body}`))));
        });
        req.on('error', fail);
        req.end();
      });
    }

    it('prints Scope, Kind, State, Tokens, Stalled, Age (and Active, Networks, Ready with -o wide)', async () => {
      const name = `ps-printer-${++counter}`;
      const body = scope({ topicHierarchy: 'origin.a.wis2.mw-met.data.core', tokens: [token(), token({ expiresAt: '2020-01-01T00:00:00Z' })] }, name);
      (body.metadata as Record<string, unknown>).labels = { printer: 'yes' };
      await create(body);
      await objects.patchNamespacedCustomObjectStatus({
        group, version, namespace, plural, name,
        body: {
          status: {
            observedGeneration: 1, state: 'Closed', scope: 'origin.a.wis2.mw-met.data.core', kind: 'topicHierarchy', tokens: 2, activeTokens: 1, networks: 3,
            conditions: [{ type: 'Ready', status: 'True', reason: 'Compiled', message: 'in snapshot', observedGeneration: 1, lastTransitionTime: '2026-11-21T10:00:00Z' }],
          },
        },
      }, k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch));

      const t = await table();
      const columns = t.columnDefinitions.map((c) => c.name);
      expect(columns).toEqual(['Name', 'Scope', 'Kind', 'State', 'Tokens', 'Active', 'Networks', 'Ready', 'Stalled', 'Age']);
      // kubectl hides priority > 0 columns unless -o wide; Stalled is empty unless the spec can never compile.
      expect(t.columnDefinitions.filter((c) => c.priority === 0).map((c) => c.name)).toEqual(['Name', 'Scope', 'Kind', 'State', 'Tokens', 'Stalled', 'Age']);
      expect(t.rows).toHaveLength(1);
      const cells = t.rows[0]?.cells ?? [];
      expect(cells.slice(0, 8)).toEqual([name, 'origin.a.wis2.mw-met.data.core', 'topicHierarchy', 'Closed', 2, 1, 3, 'True']);
      expect(cells[8] ?? '').toBe('');
      expect(String(cells[9])).toMatch(/^\d+s$/);
    });

    it('answers to its short name and category in discovery', async () => {
      const resources = await kc.makeApiClient(k8s.CustomObjectsApi).getAPIResources({ group, version });
      const ps = resources.resources.find((r) => r.name === plural);
      expect(ps?.shortNames).toEqual(['ps']);
      expect(ps?.categories).toEqual(['svc-auth']);
      expect(ps?.namespaced).toBe(true);
      expect(resources.resources.map((r) => r.name)).toContain(`${plural}/status`);
    });
  });
});

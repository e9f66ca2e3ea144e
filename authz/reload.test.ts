import { afterEach, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import {
  compileSnapshot,
  DEFAULT_CONFIG,
  dumpManifests,
  formatGeneratedToken,
  hashToken,
  newProtectedScope,
  serializeSnapshot,
  tokenIdOf,
  type ProtectedScope,
  type Scope,
  type TokenRecord,
} from '../core/index.js';
import { waitUntil } from '../test/support/wait.js';
import { createLogger } from './telemetry/log.js';
import { startServer, type RunningServer } from './server.js';
import { ScopesDirSource } from './sources/scopes-dir.js';
import { SnapshotFileSource } from './sources/snapshot-file.js';
import type { SnapshotSource } from './sources/source.js';

// Reloads through the real server: the manifest directory and the snapshot file (including kubelet's
// `..data` symlink swap), and the rule that a rejected manifest or snapshot never opens anything.

const tok = (seed: string) => formatGeneratedToken(createHash('sha256').update(`reload-test-${seed}`).digest());
const T_TOPIC = tok('topic');
const T_DATASET = tok('dataset');

const TOPIC: Scope = { kind: 'topic', value: 'origin.a.wis2.mw-met.data.core' };
const DATASET: Scope = { kind: 'dataset', value: 'urn:wmo:md:mw-met:obs' };
const TOPIC_PATH = '/data/2026-11-21/wis/origin/a/wis2/mw-met/data/core/x.bufr4';
const DATASET_PATH = '/data/2026-11-21/wis/urn:wmo:md:mw-met:obs/x.bufr4';
const OPEN_PATH = '/data/2026-11-21/wis/origin/a/wis2/other/x.bufr4';

function record(token: string): TokenRecord {
  const hash = hashToken(token);
  return { id: tokenIdOf(hash), hash, createdAt: '2026-11-01T00:00:00Z' };
}

const manifest = (scope: Scope, name: string, tokens: readonly TokenRecord[]): ProtectedScope => newProtectedScope(scope, name, 'svc', tokens);

class Capture extends Writable {
  text = '';
  override _write(chunk: Buffer, _enc: BufferEncoding, done: () => void): void {
    this.text += chunk.toString('utf8');
    done();
  }
}

function status(base: string, target: string, token?: string): Promise<number> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { 'X-Original-URI': target, ...(token ? { Authorization: `Bearer ${token}` } : {}) };
    const req = request({ host: hostname, port, path: '/authz/auth-request', headers, agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

function metrics(server: RunningServer): Promise<string> {
  const { hostname, port } = new URL(server.metricsUrl);
  return new Promise((resolve, reject) => {
    const req = request({ host: hostname, port, path: '/metrics', agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve(body));
    });
    req.on('error', reject);
    req.end();
  });
}

async function failures(server: RunningServer, source: string): Promise<number> {
  const m = new RegExp(`^svc_auth_reload_failures_total\\{source="${source}"\\} (\\d+)$`, 'm').exec(await metrics(server));
  return m ? Number(m[1]) : 0;
}

/** test/support's waitUntil with this file's argument order and a 4 s default. */
const eventually = (check: () => Promise<boolean>, what: string, timeoutMs = 4000) => waitUntil(check, { what, timeoutMs, intervalMs: 25 });

const servers: RunningServer[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.shutdown()));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'svc-auth-reload-'));
  dirs.push(d);
  return d;
}

async function serve(source: SnapshotSource, log: Capture): Promise<RunningServer> {
  const server = await startServer({
    listen: { host: '127.0.0.1', port: 0 },
    metricsListen: { host: '127.0.0.1', port: 0 },
    access: DEFAULT_CONFIG,
    source,
    logger: createLogger('info', log).logger,
  });
  servers.push(server);
  await server.firstLoad;
  return server;
}

const fast = { debounceMs: 20, rescanMs: 60_000 };

describe('--scopes-dir', () => {
  it('starts ready on an empty directory, closes a scope when a token is added and opens it when removed', async () => {
    const dir = tempDir();
    const server = await serve(new ScopesDirSource(dir, fast), new Capture());
    expect(server.state.ready).toBe(true);
    expect(await status(server.url, TOPIC_PATH)).toBe(200);

    writeFileSync(join(dir, 'topic.yaml'), dumpManifests([manifest(TOPIC, 'topic', [record(T_TOPIC)])]));
    await eventually(async () => (await status(server.url, TOPIC_PATH)) === 401, 'the topic is closed');
    expect(await status(server.url, TOPIC_PATH, T_TOPIC)).toBe(200);

    writeFileSync(join(dir, 'topic.yaml'), dumpManifests([manifest(TOPIC, 'topic', [])]));
    await eventually(async () => (await status(server.url, TOPIC_PATH)) === 200, 'the topic is open again');

    writeFileSync(join(dir, 'topic.yaml'), dumpManifests([manifest(TOPIC, 'topic', [record(T_TOPIC)])]));
    await eventually(async () => (await status(server.url, TOPIC_PATH)) === 401, 'the topic is closed again');
    unlinkSync(join(dir, 'topic.yaml'));
    await eventually(async () => (await status(server.url, TOPIC_PATH)) === 200, 'the topic is open once its file is gone');
  });

  it('reads several documents per file, and JSON', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'both.yml'), dumpManifests([manifest(TOPIC, 'topic', [record(T_TOPIC)]), manifest(DATASET, 'dataset', [record(T_DATASET)])]));
    writeFileSync(join(dir, 'ignored.txt'), 'not a manifest');
    writeFileSync(join(dir, '.hidden.yaml'), 'not: [valid');
    writeFileSync(join(dir, 'kustomization.yaml'), 'resources: [both.yml]\n');
    writeFileSync(join(dir, 'namespace.yaml'), 'apiVersion: v1\nkind: Namespace\nmetadata: {name: svc}\n');
    mkdirSync(join(dir, 'sub'));
    writeFileSync(join(dir, 'sub', 'x.yaml'), 'not: [valid');
    const server = await serve(new ScopesDirSource(dir, fast), new Capture());
    expect(await status(server.url, TOPIC_PATH)).toBe(401);
    expect(await status(server.url, DATASET_PATH, T_DATASET)).toBe(200);
    rmSync(join(dir, 'both.yml'));
    writeFileSync(join(dir, 'dataset.json'), JSON.stringify(manifest(DATASET, 'dataset', [record(T_DATASET)])));
    await eventually(async () => (await status(server.url, TOPIC_PATH)) === 200, 'the topic is open');
    expect(await status(server.url, DATASET_PATH)).toBe(401);
  });

  it('keeps the last good snapshot whole when a manifest is invalid, logs the file and field, and counts it', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'topic.yaml'), dumpManifests([manifest(TOPIC, 'topic', [record(T_TOPIC)])]));
    const log = new Capture();
    const server = await serve(new ScopesDirSource(dir, fast), log);
    expect(await status(server.url, TOPIC_PATH)).toBe(401);
    expect(await failures(server, 'scopes-dir')).toBe(0);

    // A broken edit of the very file that protects the scope: the scope must stay closed.
    const broken = manifest(TOPIC, 'topic', [record(T_TOPIC)]);
    writeFileSync(join(dir, 'topic.yaml'), dumpManifests([{ ...broken, spec: { ...broken.spec, tokens: [{ ...record(T_TOPIC), hash: 'sha256:nothex' }] } } as unknown as ProtectedScope]));
    await eventually(async () => (await failures(server, 'scopes-dir')) === 1, 'the failure is counted');
    expect(await status(server.url, TOPIC_PATH)).toBe(401);
    expect(await status(server.url, TOPIC_PATH, T_TOPIC)).toBe(200);
    const rejected = log.text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.level === 'error' && l.file === 'topic.yaml');
    expect(rejected).toMatchObject({ source: 'scopes-dir', field: 'spec.tokens[0].hash' });
    expect(String(rejected!.msg)).toContain('keeping generation');

    // Another file that does not parse at all: still rejected whole, the topic still closed.
    writeFileSync(join(dir, 'topic.yaml'), dumpManifests([manifest(TOPIC, 'topic', [record(T_TOPIC)])]));
    writeFileSync(join(dir, 'dataset.yaml'), 'apiVersion: auth.svc.io/v1alpha1\nkind: [unclosed\n');
    await eventually(async () => (await failures(server, 'scopes-dir')) === 2, 'the second failure is counted');
    expect(await status(server.url, TOPIC_PATH)).toBe(401);

    // Fixed: the next reload goes through.
    writeFileSync(join(dir, 'dataset.yaml'), dumpManifests([manifest(DATASET, 'dataset', [record(T_DATASET)])]));
    await eventually(async () => (await status(server.url, DATASET_PATH)) === 401, 'the dataset is closed');
    expect(await status(server.url, TOPIC_PATH)).toBe(401);
    expect(await failures(server, 'scopes-dir')).toBe(2);
    expect(log.text.includes(T_TOPIC)).toBe(false); // a boolean: a failure must not print the token
  });

  it.each([
    ['a typo in kind within our API group', (m: ProtectedScope) => dumpManifests([{ ...m, kind: 'ProtectedScopes' }])],
    ['no kind at all', (m: ProtectedScope) => dumpManifests([{ ...m, kind: undefined }])],
    ['a name defined twice', (m: ProtectedScope) => dumpManifests([m, manifest(DATASET, m.metadata.name, [])])],
    ['a 0-byte file', () => ''],
    ['a file of ---', () => '---\n'],
    ['a file of null', () => 'null\n'],
    ['tokenz: for tokens:', (m: ProtectedScope) => dumpManifests([m]).replace('tokens:', 'tokenz:')],
    ['tokens: not stated', (m: ProtectedScope) => dumpManifests([{ ...m, spec: { topicHierarchy: TOPIC.value } } as ProtectedScope])],
    ['both apiVersion and kind misspelt', (m: ProtectedScope) => dumpManifests([{ ...m, apiVersion: 'auth.scv.io/v1alpha1', kind: 'ProtectedScop' } as unknown as ProtectedScope])],
  ])('rejects %s rather than dropping the scope', async (_name, edit) => {
    const dir = tempDir();
    const m = manifest(TOPIC, 'topic', [record(T_TOPIC)]);
    writeFileSync(join(dir, 'topic.yaml'), dumpManifests([m]));
    const server = await serve(new ScopesDirSource(dir, fast), new Capture());
    writeFileSync(join(dir, 'topic.yaml'), edit(m));
    await eventually(async () => (await failures(server, 'scopes-dir')) === 1, 'the edit is rejected');
    expect(await status(server.url, TOPIC_PATH)).toBe(401);
  });

  it('keeps serving when the directory disappears, and follows it when it is created again', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'topic.yaml'), dumpManifests([manifest(TOPIC, 'topic', [record(T_TOPIC)])]));
    const server = await serve(new ScopesDirSource(dir, { debounceMs: 20, rescanMs: 100 }), new Capture());
    rmSync(dir, { recursive: true });
    await eventually(async () => (await failures(server, 'scopes-dir')) === 1, 'the missing directory is counted');
    expect(await status(server.url, TOPIC_PATH)).toBe(401);
    mkdirSync(dir);
    writeFileSync(join(dir, 'dataset.yaml'), dumpManifests([manifest(DATASET, 'dataset', [record(T_DATASET)])]));
    await eventually(async () => (await status(server.url, DATASET_PATH)) === 401, 'the new directory is loaded');
    expect(await status(server.url, TOPIC_PATH)).toBe(200);
    writeFileSync(join(dir, 'dataset.yaml'), dumpManifests([manifest(DATASET, 'dataset', [])]));
    await eventually(async () => (await status(server.url, DATASET_PATH)) === 200, 'an edit in the new directory is seen');
  });

  it('is not ready and allows nothing while no good snapshot has been loaded', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'topic.yaml'), 'apiVersion: auth.svc.io/v1alpha1\nkind: ProtectedScope\nmetadata: {name: topic}\nspec: {}\n');
    const server = await serve(new ScopesDirSource(dir, fast), new Capture());
    expect(server.state.ready).toBe(false);
    expect(await status(server.url, OPEN_PATH)).toBe(403);
    expect(await failures(server, 'scopes-dir')).toBe(1);
    writeFileSync(join(dir, 'topic.yaml'), dumpManifests([manifest(TOPIC, 'topic', [record(T_TOPIC)])]));
    await eventually(async () => server.state.ready, 'ready');
    expect(await status(server.url, OPEN_PATH)).toBe(200);
    expect(await status(server.url, TOPIC_PATH)).toBe(401);
  });
});

describe('--snapshot-file', () => {
  const snapshotOf = (objects: ProtectedScope[]) => serializeSnapshot(compileSnapshot(objects));
  const A = () => snapshotOf([manifest(TOPIC, 'topic', [record(T_TOPIC)])]);
  const B = () => snapshotOf([manifest(TOPIC, 'topic', [record(T_TOPIC)]), manifest(DATASET, 'dataset', [record(T_DATASET)])]);

  /** kubelet's ConfigMap volume: FILE → ..data/FILE, ..data → ..<timestamp>/, swapped by renaming a new ..data over it. */
  function kubeletVolume(dir: string) {
    let n = 0;
    const publish = (text: string) => {
      const stamp = `..2026_11_21_10_00_00.${String(++n).padStart(9, '0')}`;
      mkdirSync(join(dir, stamp));
      writeFileSync(join(dir, stamp, 'snapshot'), text);
      symlinkSync(stamp, join(dir, '..data_tmp'));
      renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
    };
    return {
      file: join(dir, 'snapshot'),
      init(text: string) {
        publish(text);
        symlinkSync('..data/snapshot', join(dir, 'snapshot'));
      },
      publish,
    };
  }

  it('loads, follows kubelet symlink swaps, and rejects a truncated file keeping the previous snapshot', async () => {
    const dir = tempDir();
    const volume = kubeletVolume(dir);
    volume.init(A());
    const log = new Capture();
    const server = await serve(new SnapshotFileSource(volume.file, fast), log);
    expect(server.state.ready).toBe(true);
    expect(await status(server.url, TOPIC_PATH)).toBe(401);
    expect(await status(server.url, DATASET_PATH)).toBe(200);

    volume.publish(B());
    await eventually(async () => (await status(server.url, DATASET_PATH)) === 401, 'the swap to B is loaded');
    const generationB = server.state.index!.generation;

    const longer = snapshotOf([manifest(TOPIC, 'topic', [record(T_TOPIC)]), manifest(DATASET, 'dataset', [record(T_DATASET)]), manifest({ kind: 'path', value: 'processes/svc' }, 'svc', [record(tok('svc'))])]);
    volume.publish(longer.slice(0, longer.length - 40));
    await eventually(async () => (await failures(server, 'snapshot-file')) === 1, 'the truncated file is rejected');
    expect(server.state.index!.generation).toBe(generationB);
    expect(await status(server.url, DATASET_PATH)).toBe(401);
    expect(await status(server.url, DATASET_PATH, T_DATASET)).toBe(200);
    expect(log.text).toMatch(/"file":"snapshot"/);

    volume.publish(A());
    await eventually(async () => (await status(server.url, DATASET_PATH)) === 200, 'the swap back to A is loaded');
    expect(await failures(server, 'snapshot-file')).toBe(1);
  });

  it('waits, not ready, for a file that does not exist yet, then loads it when it appears', async () => {
    const dir = tempDir();
    const file = join(dir, 'snapshot.json');
    const server = await serve(new SnapshotFileSource(file, fast), new Capture());
    expect(server.state.ready).toBe(false);
    expect(await status(server.url, OPEN_PATH)).toBe(403);
    writeFileSync(`${file}.tmp`, A());
    renameSync(`${file}.tmp`, file);
    await eventually(async () => server.state.ready, 'ready');
    expect(await status(server.url, OPEN_PATH)).toBe(200);
    expect(await status(server.url, TOPIC_PATH)).toBe(401);
  });

  it('rejects a snapshot whose header does not match its lines', async () => {
    const dir = tempDir();
    const file = join(dir, 'snapshot.json');
    writeFileSync(file, A());
    const server = await serve(new SnapshotFileSource(file, fast), new Capture());
    const [, ...lines] = B().trimEnd().split('\n');
    const [header] = A().split('\n');
    writeFileSync(file, `${[header, ...lines].join('\n')}\n`);
    await eventually(async () => (await failures(server, 'snapshot-file')) === 1, 'the mismatched file is rejected');
    expect(await status(server.url, TOPIC_PATH)).toBe(401);
    expect(await status(server.url, DATASET_PATH)).toBe(200);
  });
});

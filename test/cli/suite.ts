// The svc auth commands, every flag and output format, run in-process against one backend. The same
// suite runs on a manifest directory, on the in-memory fake API server (unit) and on a real
// kube-apiserver (integration), so both backends are held to the same behaviour; outputs are pinned by
// snapshots with the store's location scrubbed to <store>.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { hashToken, tokenIdOf, type ProtectedScope } from '../../core/index.js';
import { makeWis2boxAuthStore, type StoreRow } from '../support/wis2box-auth-store.js';
import { shellWord } from '../../cli/program.js';
import { FIXED_NOW, removeDir, svc, tempDir, type Result, type RunOptions } from './harness.js';

export interface BackendFixture {
  readonly name: string;
  /** Makes a fresh, empty store for one test; returns the global flags that select it. */
  fresh(): Promise<string[]>;
  /** A comparable picture of the store: bytes of a directory, objects with resourceVersions. */
  state(): Promise<unknown>;
  /** The ProtectedScopes as name + spec, sorted by name (for snapshots). */
  objects(): Promise<{ name: string; spec: unknown }[]>;
  /** Adds an object the way a person would (a hand-written manifest, kubectl apply). */
  put(object: ProtectedScope): Promise<void>;
  /** Everything stored, as text: no token may appear in it. */
  dump(): Promise<string>;
  /** The store's location as the CLI names it ("directory /tmp/x", "namespace n (context c)"). */
  where(): string;
  /** The namespace of this test's store, if any (scrubbed from snapshots as <namespace>). */
  namespace?(): string;
  /** Flags that select this backend but a namespace that does not exist (Kubernetes) or a missing directory. */
  missingStoreArgs(): string[];
  /**
   * After each command: what an svc-operator serving the store would have done by the next one (the real API server's
   * suite writes each new generation's status, as the fake API server's stand-in operator does), so show's output
   * is the same on every backend.
   */
  settle?(): Promise<void>;
}

export const TOPIC = 'origin.a.wis2.mw-met.data.core';
export const T1 = 'token-of-a-b-0000001';
export const T2 = 'token-of-a-b-c-000002';
export const T3 = 'token-of-processes-03';
const HAND_TOKEN = 'hand-written-token-0004';
const EXPIRED_TOKEN = 'expired-token-000000005';

function record(token: string, extra: { description?: string; createdAt?: string; expiresAt?: string } = {}) {
  const hash = hashToken(token);
  return { id: tokenIdOf(hash), hash, ...(extra.description ? { description: extra.description } : {}), createdAt: extra.createdAt ?? '2026-01-01T00:00:00Z', ...(extra.expiresAt ? { expiresAt: extra.expiresAt } : {}) };
}

/**
 * A wis2box-auth store's rows: a short token as wis2box's docs show, one topic of each kind, one of no kind, and a
 * bare word (closed wherever it stood in a URL) whose token has spaces and other than ASCII, as wis2box-auth took.
 */
const IMPORT_ROWS: readonly StoreRow[] = [
  { token: 'mytoken', topic: 'wis2downloader' },
  { token: 'downloader-partner-0002', topic: 'wis2downloader' },
  { token: 'dataset-partner-token-3', topic: 'urn:wmo:md:mw-met:obs' },
  { token: 'dotted-topic-token-0004', topic: 'mw-met.data.core.weather' },
  { token: 'processes-token-0000005', topic: 'processes/wis2box' },
  { token: 'stations-token-00000006', topic: 'collections/stations' },
  { token: 'no-kind-token-000000007', topic: 'mw met.data' },
  { token: 'a wörd partner token 8', topic: 'mw-word' },
];

/** What every write says last on stderr: when it will be in force (the wording of each store is its own). */
export const IN_FORCE_LAST = /(^|\n)Not in force yet: [^\n]+\n$/;

export function handWritten(name: string, spec: Record<string, unknown>): ProtectedScope {
  return { apiVersion: 'auth.svc.io/v1alpha1', kind: 'ProtectedScope', metadata: { name }, spec: spec as ProtectedScope['spec'] };
}

export function runSuite(fixture: BackendFixture): void {
  let globals: string[] = [];
  const cli = async (args: readonly string[], options: RunOptions = {}): Promise<Result> => {
    const r = await svc([...globals, ...args], options);
    await fixture.settle?.();
    return r;
  };
  const scrub = (text: string) => {
    // The store flags are repeated in the commands printed to run next: one placeholder, as the store's name.
    const out = text.split(fixture.where()).join('<store>').split(globals.map(shellWord).join(' ')).join('<store flags>');
    const ns = fixture.namespace?.();
    return ns ? out.replace(new RegExp(`\\b${ns}\\b`, 'g'), '<namespace>') : out;
  };
  const scrubbed = (r: Result) => ({ code: r.code, stdout: scrub(r.stdout), stderr: scrub(r.stderr) });
  /** The command must fail with this exit code, one line on stderr, nothing on stdout, the store unchanged. */
  const refused = async (args: readonly string[], code: 1 | 2, pattern: RegExp, options: RunOptions = {}) => {
    const before = await fixture.state();
    const r = await cli(args, options);
    expect({ code: r.code, stdout: r.stdout }).toEqual({ code, stdout: '' });
    expect(r.stderr).toMatch(/^error: [^\n]+\n$/);
    expect(r.stderr).toMatch(pattern);
    expect(await fixture.state()).toEqual(before);
    return r;
  };

  /** A small realistic store: CLI-made and hand-written objects, an expired token, an open scope. */
  const populate = async () => {
    expect((await cli(['auth', 'add-token', '--topic-hierarchy', TOPIC, '--description', 'partner NMHS'], { seed: 'a' })).code).toBe(0);
    expect((await cli(['auth', 'add-token', '--topic-hierarchy', TOPIC, '--expires-in', '90d'], { seed: 'b' })).code).toBe(0);
    await fixture.put(handWritten('partner-core', { topicHierarchy: TOPIC, tokens: [record(HAND_TOKEN, { description: 'hand-written' })] }));
    await fixture.put(
      handWritten('obs-expired', { metadataId: 'urn:wmo:md:mw-met:obs', tokens: [record(EXPIRED_TOKEN, { createdAt: '2025-01-01T00:00:00Z', expiresAt: '2026-01-01T00:00:00Z' })] }),
    );
    expect((await cli(['auth', 'add-token', '--path', 'processes/svc', T3])).code).toBe(0);
    await fixture.put(handWritten('stations-open', { path: 'collections/stations', tokens: [] }));
  };

  beforeEach(async () => {
    globals = await fixture.fresh();
  });

  describe(`add-token (${fixture.name})`, () => {
    it('generates a token, prints it once with its id, stores only its hash under the deterministic name', async () => {
      const r = await cli(['auth', 'add-token', '--topic-hierarchy', 'origin/a/wis2/mw-met/data/core']);
      expect(scrubbed(r)).toMatchSnapshot();
      const token = /^Token: +(svc_\w+)$/m.exec(r.stdout)![1]!;
      expect(r.stderr).not.toContain(token);
      expect(await fixture.objects()).toMatchSnapshot();
      expect(await fixture.dump()).not.toContain(token);
      expect(await fixture.dump()).toContain(hashToken(token));
    });

    it('adds a supplied token with description and --expires-in, -o json; never echoes a supplied token', async () => {
      const r = await cli(['auth', 'add-token', '--metadata-id', 'urn:wmo:md:mw-met:surface-weather-observations', T1, '--description', 'partner NMHS', '--expires-in', '2w', '-o', 'json']);
      expect(scrubbed(r)).toMatchSnapshot();
      expect(r.stdout + r.stderr).not.toContain(T1);
      expect(await fixture.dump()).not.toContain(T1);
    });

    it('-o yaml, --expires-at, and a second token closes nothing new (same object, two tokens)', async () => {
      expect((await cli(['auth', 'add-token', '--path', 'processes/svc', T1])).code).toBe(0);
      const r = await cli(['auth', 'add-token', '--path', 'processes/svc', '--expires-at', '2027-01-01T12:00:00+01:00', '-o', 'yaml']);
      expect(scrubbed(r)).toMatchSnapshot();
      expect(await fixture.objects()).toMatchSnapshot();
    });

    it('reads the token from stdin with "-"', async () => {
      const r = await cli(['auth', 'add-token', '--path', 'collections/stations', '-'], { stdin: `${T2}\n` });
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(`Id:      ${tokenIdOf(hashToken(T2))}`);
      expect(r.stdout).not.toContain(T2);
    });

    it('--dry-run -o yaml prints the manifest (token on stderr) and writes nothing', async () => {
      expect((await cli(['auth', 'add-token', '--topic-hierarchy', TOPIC, T1])).code).toBe(0);
      const before = await fixture.state();
      const r = await cli(['auth', 'add-token', '--topic-hierarchy', TOPIC, '--dry-run', '-o', 'yaml']);
      expect(scrubbed(r)).toMatchSnapshot();
      const token = /token (svc_\w+)/.exec(r.stderr)![1]!;
      expect(r.stdout).not.toContain(token);
      expect(await fixture.state()).toEqual(before);
    });

    it('--dry-run -o json and text write nothing either', async () => {
      const before = await fixture.state();
      const json = await cli(['auth', 'add-token', '--topic-hierarchy', TOPIC, T1, '--dry-run', '-o', 'json']);
      expect(scrubbed(json)).toMatchSnapshot();
      const text = await cli(['auth', 'add-token', '--topic-hierarchy', TOPIC, '--dry-run']);
      expect(scrubbed(text)).toMatchSnapshot();
      expect(await fixture.state()).toEqual(before);
    });

    it('--dry-run in text never treats the token as stored: no "store this token", no removal command, no token', async () => {
      for (const args of [[], [T1]]) {
        const r = await cli(['auth', 'add-token', '--path', 'processes/svc', ...args, '--dry-run']);
        expect(r.code).toBe(0);
        const said = r.stdout + r.stderr;
        expect(said).not.toMatch(/store (this|the) token/i);
        expect(said).not.toContain('remove-token');
        expect(/svc_[A-Za-z0-9]{49}/.test(said) || said.includes(T1)).toBe(false);
        expect(said).toContain('Dry run: nothing was written.');
      }
    });

    it('the commands it prints to run next keep the store flags given', async () => {
      const store = globals.map(shellWord).join(' ');
      const added = await cli(['auth', 'add-token', '--path', 'processes/svc']);
      expect(added.stderr).toContain(`Remove it with: svc ${store} auth remove-token --path processes/svc --id `);
      const missing = await cli(['auth', 'remove-token', '--path', 'processes/svc', '--id', '0123456789ab']);
      expect(missing.stderr).toContain(`list the ids with svc ${store} auth show --path processes/svc`);
      const denied = await cli(['auth', 'has-access-topic', '--path', 'processes/other', T1]);
      expect(denied.stdout).toContain(`add one with svc ${store} auth add-token --path processes/other`);
      const asKubectl = await cli(['auth', 'add-token', '--path', 'processes/svc'], { programName: 'kubectl svc', seed: 'kubectl' });
      expect(asKubectl.stderr).toContain(`Remove it with: kubectl svc ${store} auth remove-token --path processes/svc --id `);
    });

    it('refuses a token the scope already has (exit 1, unchanged)', async () => {
      expect((await cli(['auth', 'add-token', '--topic-hierarchy', TOPIC, T1])).code).toBe(0);
      const r = await refused(['auth', 'add-token', '--topic-hierarchy', TOPIC, T1], 1, /already a token of topic:origin/);
      expect(r.stderr).not.toContain(T1);
    });

    it('also when the token sits in a hand-written object of the same scope', async () => {
      await fixture.put(handWritten('hand', { topicHierarchy: TOPIC, tokens: [record(T1)] }));
      await refused(['auth', 'add-token', '--topic-hierarchy', TOPIC, T1], 1, /already a token .* in hand\)/);
    });
  });

  describe(`show (${fixture.name})`, () => {
    it.each(['table', 'text', 'json', 'yaml'])('-o %s: scopes merged across objects, never a token', async (format) => {
      await populate();
      const r = await cli(['auth', 'show', '-o', format]);
      expect(r.code).toBe(0);
      expect(scrubbed(r)).toMatchSnapshot();
      for (const t of [T3, HAND_TOKEN, EXPIRED_TOKEN, hashToken(T3)]) expect(r.stdout).not.toContain(t);
    });

    it('table is the default; a scope flag narrows it, an unknown scope shows as open', async () => {
      await populate();
      const all = await cli(['auth', 'show']);
      expect(all.stdout).toBe((await cli(['auth', 'show', '-o', 'table'])).stdout);
      expect(scrubbed(await cli(['auth', 'show', '--topic-hierarchy', 'origin/a/wis2/mw-met/data/core']))).toMatchSnapshot();
      expect(scrubbed(await cli(['auth', 'show', '--metadata-id', 'urn:x:never-protected', '-o', 'json']))).toMatchSnapshot();
    });

    it('with no object, shows the stations collection closed by default (and nothing with --open-paths-by-default)', async () => {
      const empty = scrubbed(await cli(['auth', 'show']));
      expect(empty.code).toBe(0);
      expect(empty.stdout).toMatch(/^path +collections\/stations +Closed \(default\) +0 /m);
      expect(empty.stderr).toMatch(/closed by default/);
      expect(JSON.parse((await cli(['auth', 'show', '-o', 'json'])).stdout)).toEqual({
        store: fixture.where(),
        scopes: [{ kind: 'path', value: 'collections/stations', state: 'Closed', closedBy: 'default', closedFlag: false, tokenCount: 0, activeTokenCount: 0, objects: [], tokens: [], subjects: [], networks: [] }],
      });
      expect(scrubbed(await cli(['--open-paths-by-default', 'auth', 'show']))).toEqual({ code: 0, stdout: '', stderr: 'No protected scopes in <store>: everything is open.\n' });
    });
  });

  describe(`has-access-topic (${fixture.name})`, () => {
    beforeEach(async () => {
      for (const [flag, scope, token] of [
        ['--topic-hierarchy', 'a.b', T1],
        ['--topic-hierarchy', 'a.b.c.x', T2],
        ['--path', 'processes/svc', T3],
      ] as const) {
        expect((await cli(['auth', 'add-token', flag, scope, token])).code).toBe(0);
      }
      await fixture.put(handWritten('expired', { metadataId: 'urn:wmo:md:x', tokens: [record(EXPIRED_TOKEN, { expiresAt: '2026-01-01T00:00:00Z' })] }));
    });

    it.each([
      ['own scope', ['--topic-hierarchy', 'a.b', T1], 0],
      ['open child of a closed topic uses the parent\'s tokens', ['--topic-hierarchy', 'a/b/c/d', T1], 0],
      ['the closed child governs: the parent\'s token no longer grants', ['--topic-hierarchy', 'a.b.c.x.y', T1], 1],
      ['an open scope needs no token', ['--topic-hierarchy', 'z.y', T1], 0],
      ['a process under processes/svc', ['--path', 'processes/svc-synop2bufr', T3], 0],
      ['another scope\'s token', ['--path', 'processes/svc-csv2bufr', T1], 1],
      ['unknown token', ['--topic-hierarchy', 'a.b', 'not-a-known-token-at-all'], 1],
      ['expired token', ['--metadata-id', 'urn:wmo:md:x:child', EXPIRED_TOKEN], 1],
      ['malformed token', ['--topic-hierarchy', 'a.b', 'svc_not-a-real-checksum'], 1],
    ])('%s', async (_name, args, code) => {
      const r = await cli(['auth', 'has-access-topic', ...(args as string[])]);
      expect(r.code).toBe(code);
      expect(r.stdout).toMatch(code === 0 ? /^granted: [^\n]+\n$/ : /^denied: [^\n]+\n$/);
      expect(r.stdout).toMatchSnapshot();
      expect(r.stdout).not.toContain((args as string[])[2]);
    });

    it.each(['json', 'yaml'])('-o %s', async (format) => {
      const granted = await cli(['auth', 'has-access-topic', '--topic-hierarchy', 'a.b.c', T1, '-o', format]);
      const denied = await cli(['auth', 'has-access-topic', '--topic-hierarchy', 'a.b.c.x', T1, '-o', format]);
      expect([granted.code, denied.code]).toEqual([0, 1]);
      expect(granted.stdout + denied.stdout).toMatchSnapshot();
    });

    it('reads the token from stdin with "-"', async () => {
      expect((await cli(['auth', 'has-access-topic', '--topic-hierarchy', 'a.b', '-'], { stdin: `${T1}\n` })).code).toBe(0);
    });
  });

  describe(`remove-tokens (${fixture.name})`, () => {
    it('removes every token from every object of the scope; the objects stay, empty: the scope is open', async () => {
      await populate();
      const r = await cli(['auth', 'remove-tokens', '--topic-hierarchy', TOPIC]);
      expect(scrubbed(r)).toMatchSnapshot();
      expect(await fixture.objects()).toMatchSnapshot();
      expect((await cli(['auth', 'has-access-topic', '--topic-hierarchy', TOPIC, 'anything-at-all-0001'])).code).toBe(0);
    });

    it.each(['json', 'yaml'])('-o %s, and an already open scope is not an error', async (format) => {
      expect((await cli(['auth', 'add-token', '--metadata-id', 'urn:a:b', T1])).code).toBe(0);
      expect(scrubbed(await cli(['auth', 'remove-tokens', '--metadata-id', 'urn:a:b', '-o', format]))).toMatchSnapshot();
      const before = await fixture.state();
      expect(scrubbed(await cli(['auth', 'remove-tokens', '--metadata-id', 'urn:a:b', '-o', format]))).toMatchSnapshot();
      expect(await fixture.state()).toEqual(before);
    });
  });

  describe(`remove-token (${fixture.name})`, () => {
    it('by id, then by token: the last one leaves a path scope closed by default', async () => {
      expect((await cli(['auth', 'add-token', '--path', 'processes/svc', T1])).code).toBe(0);
      expect((await cli(['auth', 'add-token', '--path', 'processes/svc', T2])).code).toBe(0);
      const byId = await cli(['auth', 'remove-token', '--path', 'processes/svc', '--id', tokenIdOf(hashToken(T1))]);
      expect(scrubbed(byId)).toMatchSnapshot();
      expect((await cli(['auth', 'has-access-topic', '--path', 'processes/svc', T2])).code).toBe(0);
      expect((await cli(['auth', 'has-access-topic', '--path', 'processes/svc', T1])).code).toBe(1);
      const byToken = await cli(['auth', 'remove-token', '--path', 'processes/svc', T2, '-o', 'json']);
      expect(scrubbed(byToken)).toMatchSnapshot();
      expect(byToken.stdout).not.toContain(T2);
      expect(await fixture.objects()).toMatchSnapshot();
    });

    it('removes the token from hand-written objects of the scope too, -o yaml', async () => {
      await fixture.put(handWritten('hand-a', { topicHierarchy: 'a.b', tokens: [record(T1), record(T2)] }));
      await fixture.put(handWritten('hand-b', { topicHierarchy: 'a.b', tokens: [record(T1)] }));
      expect(scrubbed(await cli(['auth', 'remove-token', '--topic-hierarchy', 'a.b', '--id', tokenIdOf(hashToken(T1)), '-o', 'yaml']))).toMatchSnapshot();
      expect(await fixture.objects()).toMatchSnapshot();
    });

    it('refuses an unknown id or token (exit 1) and a malformed id (exit 2), store unchanged', async () => {
      expect((await cli(['auth', 'add-token', '--path', 'processes/svc', T1])).code).toBe(0);
      await refused(['auth', 'remove-token', '--path', 'processes/svc', '--id', '0123456789ab'], 1, /no token with id 0123456789ab in path:processes\/svc: list the ids with svc .*auth show --path processes\/svc/);
      const r = await refused(['auth', 'remove-token', '--path', 'processes/svc', T2], 1, /the given token \(id [0-9a-f]{12}\) is not a token of path:processes\/svc/);
      expect(r.stderr).not.toContain(T2);
      await refused(['auth', 'remove-token', '--path', 'processes/svc', '--id', 'xyz'], 2, /--id: "xyz" is not a token id/);
      await refused(['auth', 'remove-token', '--path', 'processes/svc'], 2, /give the token or --id ID/);
      await refused(['auth', 'remove-token', '--path', 'processes/svc', T1, '--id', tokenIdOf(hashToken(T1))], 2, /give the token or --id ID/);
    });
  });

  describe(`add-subject and remove-subject (${fixture.name})`, () => {
    it('a subject closes a scope, grants its user or group, and can be taken back; the scope opens with the last', async () => {
      const added = scrubbed(await cli(['auth', 'add-subject', '--topic-hierarchy', TOPIC, '--group', 'wis2-ops']));
      expect(added).toEqual({ code: 0, stdout: `topic ${TOPIC} grants group wis2-ops; the store now says Closed, 0 tokens, 1 subject (<store>)\n`, stderr: expect.stringMatching(/^New scope: topic origin\.a\.wis2\.mw-met\.data\.core \(no object in <store> held it before\)\nNot in force yet: [^\n]+ may allow what this takes away for up to 30 s more[^\n]*\n$/) });
      expect((await cli(['auth', 'add-subject', '--topic-hierarchy', TOPIC, '--user', 'alice@example.org'])).code).toBe(0);
      const objects = await fixture.objects();
      expect(objects).toEqual([{ name: expect.stringMatching(/^topic-origin-a-wis2-mw-met-data-core-[0-9a-f]{8}$/), spec: { topicHierarchy: TOPIC, tokens: [], subjects: [{ kind: 'Group', name: 'wis2-ops' }, { kind: 'User', name: 'alice@example.org' }] } }]);
      // Again: nothing written, and it says so.
      const before = await fixture.state();
      expect((await cli(['auth', 'add-subject', '--topic-hierarchy', TOPIC, '--group', 'wis2-ops'])).stdout).toMatch(/already grants group wis2-ops/);
      expect(await fixture.state()).toEqual(before);
      // show lists them; has-access-topic answers for an identity.
      expect(JSON.parse((await cli(['auth', 'show', '--topic-hierarchy', TOPIC, '-o', 'json'])).stdout).scopes[0]).toMatchObject({ state: 'Closed', closedBy: 'subjects', tokenCount: 0, subjects: [{ kind: 'User', name: 'alice@example.org' }, { kind: 'Group', name: 'wis2-ops' }] });
      expect((await cli(['auth', 'show'])).stdout).toMatch(/SUBJECTS[\s\S]*user:alice@example.org,group:wis2-ops/);
      const asGroup = await cli(['auth', 'has-access-topic', '--topic-hierarchy', `${TOPIC}.weather`, '--user', 'bob', '--group', 'staff', '--group', 'wis2-ops']);
      expect(asGroup).toEqual({ code: 0, stdout: `granted: user bob, as a member of group wis2-ops, is a subject of topic:${TOPIC}, which governs topic:${TOPIC}.weather\n`, stderr: '' });
      expect((await cli(['auth', 'has-access-topic', '--topic-hierarchy', TOPIC, '--user', 'alice@example.org'])).code).toBe(0);
      const stranger = await cli(['auth', 'has-access-topic', '--topic-hierarchy', TOPIC, '--user', 'mallory', '-o', 'json']);
      expect(stranger.code).toBe(1);
      expect(JSON.parse(stranger.stdout)).toMatchObject({ granted: false, outcome: 'insufficient-scope', user: 'mallory' });
      // A token of no scope is still denied (subjects do not open the scope to tokens).
      expect((await cli(['auth', 'has-access-topic', '--topic-hierarchy', TOPIC, T1])).code).toBe(1);
      // remove-tokens leaves it closed while subjects remain, and says so.
      expect((await cli(['auth', 'remove-tokens', '--topic-hierarchy', TOPIC])).stdout).toMatch(/it stays closed \(it grants subjects/);
      expect(scrubbed(await cli(['auth', 'remove-subject', '--topic-hierarchy', TOPIC, '--group', 'wis2-ops'])).stdout).toBe(`topic ${TOPIC} no longer grants group wis2-ops; the store now says Closed, 0 tokens, 1 subject (<store>)\n`);
      const last = JSON.parse((await cli(['auth', 'remove-subject', '--topic-hierarchy', TOPIC, '--user', 'alice@example.org', '-o', 'json'])).stdout);
      expect(last).toMatchObject({ state: 'Open', tokens: 0, subjects: [] });
      expect((await fixture.objects())[0]!.spec).toEqual({ topicHierarchy: TOPIC, tokens: [] });
    });

    it('removing a subject the scope does not have fails and changes nothing', async () => {
      expect((await cli(['auth', 'add-subject', '--path', 'processes/svc', '--user', 'alice'])).code).toBe(0);
      const before = await fixture.state();
      const r = await cli(['auth', 'remove-subject', '--path', 'processes/svc', '--user', 'bob']);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/user bob is not a subject of path:processes\/svc: list the subjects with svc .*auth show --path processes\/svc \(nothing was changed\)/);
      expect(await fixture.state()).toEqual(before);
    });

    it('edits every object that lists the subject, including hand-written ones', async () => {
      await fixture.put(handWritten('hand-a', { topicHierarchy: 'a.b', tokens: [], subjects: [{ kind: 'User', name: 'alice' }, { kind: 'Group', name: 'g' }] }));
      await fixture.put(handWritten('hand-b', { topicHierarchy: 'a.b', tokens: [record(T1)], subjects: [{ kind: 'User', name: 'alice' }] }));
      expect((await cli(['auth', 'remove-subject', '--topic-hierarchy', 'a.b', '--user', 'alice'])).code).toBe(0);
      expect(await fixture.objects()).toEqual([
        { name: 'hand-a', spec: { topicHierarchy: 'a.b', tokens: [], subjects: [{ kind: 'Group', name: 'g' }] } },
        { name: 'hand-b', spec: { topicHierarchy: 'a.b', tokens: [record(T1)] } },
      ]);
    });
  });

  describe(`close and open (${fixture.name})`, () => {
    const DS = 'urn:wmo:md:mw-met:embargo';
    it('close keeps a scope closed with no token, open clears it; both say the real state', async () => {
      const closed = scrubbed(await cli(['auth', 'close', '--metadata-id', DS]));
      expect(closed).toEqual({ code: 0, stdout: `dataset ${DS} is closed (closed: true); the store now says Closed, 0 tokens (closed: true) (<store>)\n`, stderr: expect.stringMatching(/^New scope: dataset urn:wmo:md:mw-met:embargo [^\n]+\nNot in force yet: [^\n]+\n$/) });
      const objects = await fixture.objects();
      expect(objects).toEqual([{ name: expect.stringMatching(/^dataset-urn-wmo-md-mw-met-embargo-[0-9a-f]{8}$/), spec: { metadataId: DS, tokens: [], closed: true } }]);
      const before = await fixture.state();
      expect(scrubbed(await cli(['auth', 'close', '--metadata-id', DS])).stdout).toMatch(/was already closed \(closed: true\)/);
      expect(await fixture.state()).toEqual(before);
      expect(JSON.parse((await cli(['auth', 'show', '--metadata-id', DS, '-o', 'json'])).stdout).scopes[0]).toMatchObject({ state: 'Closed', closedBy: 'flag', tokenCount: 0 });
      const denied = await cli(['auth', 'has-access-topic', '--metadata-id', DS, T1]);
      expect(denied.code).toBe(1);
      // remove-tokens leaves it closed, and says so.
      expect((await cli(['auth', 'add-token', '--metadata-id', DS, T1])).code).toBe(0);
      expect((await cli(['auth', 'remove-tokens', '--metadata-id', DS])).stdout).toMatch(/in the store: it stays closed \(closed: true; svc .*auth open clears it\) \(/);
      const opened = scrubbed(await cli(['auth', 'open', '--metadata-id', DS, '-o', 'json']));
      expect(JSON.parse(opened.stdout)).toMatchObject({ written: [expect.any(String)], state: 'Open', tokens: 0 });
      expect((await fixture.objects())[0]!.spec).toEqual({ metadataId: DS, tokens: [] });
      expect((await cli(['auth', 'has-access-topic', '--metadata-id', DS, T1])).code).toBe(0);
    });

    it('open on a scope with tokens, or on a path scope, says it stays closed and why', async () => {
      expect((await cli(['auth', 'add-token', '--topic-hierarchy', 'a.b', T1])).code).toBe(0);
      expect((await cli(['auth', 'close', '--topic-hierarchy', 'a.b'])).code).toBe(0);
      expect((await cli(['auth', 'open', '--topic-hierarchy', 'a.b'])).stdout).toMatch(/no longer says closed: true: it stays closed \(it has tokens; remove them with remove-tokens\); the store now says Closed, 1 token/);
      expect((await cli(['auth', 'add-token', '--path', 'processes/svc', T3])).code).toBe(0);
      expect((await cli(['auth', 'open', '--path', 'processes/svc'])).stdout).toMatch(/was not closed by closed: true: it stays closed \(it has tokens; remove them with remove-tokens\); still Closed, 1 token/);
      // A scope no object holds has nothing to open: said, exit 1, nothing written (a typo would otherwise read as done).
      await refused(['auth', 'open', '--path', 'processes/other'], 1, /path:processes\/other is not a scope of .*: there is no closed: true to remove/);
    });

    it('-o wcmp2 prints the WCMP2 link security object of a closed scope; an open one has none', async () => {
      expect((await cli(['auth', 'close', '--metadata-id', DS])).code).toBe(0);
      const r = await cli(['auth', 'show', '--metadata-id', DS, '-o', 'wcmp2']);
      expect(r.code).toBe(0);
      const { security } = JSON.parse(r.stdout) as { security: Record<string, { type: string; scheme?: string; in?: string; name?: string }> };
      expect(Object.keys(security)).toEqual(['default', 'query', 'basic']);
      expect(security.default).toMatchObject({ type: 'http', scheme: 'bearer' });
      expect(security.query).toMatchObject({ type: 'apiKey', in: 'query', name: 'token' });
      expect(security.basic).toMatchObject({ type: 'http', scheme: 'basic' });
      await refused(['auth', 'show', '--metadata-id', 'urn:x:open', '-o', 'wcmp2'], 1, /is open in .*: its links need no security object/);
      await refused(['auth', 'show', '-o', 'wcmp2'], 2, /-o wcmp2 prints the WCMP2 link security object of one scope/);
    });

    it('bad input: two scopes, or none, exit 2 and change nothing', async () => {
      await refused(['auth', 'close', '--metadata-id', DS, '--path', 'processes/svc'], 2, /give exactly one scope/);
      await refused(['auth', 'open'], 2, /a scope is needed/);
    });
  });

  describe(`bad input leaves the store unchanged (${fixture.name})`, () => {
    beforeEach(async () => {
      expect((await cli(['auth', 'add-token', '--topic-hierarchy', TOPIC, T1])).code).toBe(0);
    });

    it.each([
      ['invalid topic', ['auth', 'add-token', '--topic-hierarchy', 'a..b'], /--topic-hierarchy: invalid topic hierarchy/],
      ['invalid URN', ['auth', 'add-token', '--metadata-id', 'wmo:md:x'], /--metadata-id: invalid metadata id/],
      ['invalid path', ['auth', 'add-token', '--path', 'processes/'], /--path: invalid path/],
      ['path outside the known ones', ['auth', 'remove-tokens', '--path', 'collections/other'], /--path: invalid path/],
      ['a topic with a leading "/"', ['auth', 'add-token', '--topic-hierarchy', '/origin/a/wis2'], /--topic-hierarchy: invalid topic hierarchy "\/origin\/a\/wis2": no "\/" at the start or the end/],
      ['a topic with a trailing "/"', ['auth', 'close', '--topic-hierarchy', 'origin/a/'], /no "\/" at the start or the end/],
      ['a path below the API prefix that no special form names', ['auth', 'add-token', '--path', 'oapi/processes/svc/execution'], /--path: oapi\/processes\/svc\/execution names \/oapi\/processes.*use the path processes\/svc/],
      ['an API collection as a path', ['auth', 'close', '--path', '/oapi/collections/urn:x:y'], /use --topic-hierarchy urn:x:y or --metadata-id urn:x:y/],
      ['a bad --api-prefix', ['--api-prefix', '/', 'auth', 'show'], /--api-prefix: invalid path prefix/],
      ['short token', ['auth', 'add-token', '--path', 'processes/svc', 'short'], /invalid token: a token must be at least 16 characters/],
      ['token with whitespace', ['auth', 'add-token', '--path', 'processes/svc', 'has white space in it'], /printable ASCII without whitespace/],
      ['svc_ token with a bad checksum', ['auth', 'add-token', '--path', 'processes/svc', 'svc_0000000000000000000000000000000000000000000000000'], /checksum/],
      ['two scope flags', ['auth', 'add-token', '--path', 'processes/svc', '--topic-hierarchy', 'a'], /give exactly one scope, not --topic-hierarchy and --path \(see svc auth add-token --help\)/],
      ['no scope flag', ['auth', 'remove-tokens'], /a scope is needed: give one of --topic-hierarchy T, --metadata-id M or --path P \(see svc auth remove-tokens --help\)/],
      ['no scope flag for a check', ['auth', 'has-access-topic', T1], /a scope is needed/],
      ['both expiries', ['auth', 'add-token', '--path', 'processes/svc', '--expires-in', '1d', '--expires-at', '2030-01-01T00:00:00Z'], /not both/],
      ['bad duration', ['auth', 'add-token', '--path', 'processes/svc', '--expires-in', '90'], /--expires-in: "90" is not a duration/],
      ['expiry in the past', ['auth', 'add-token', '--path', 'processes/svc', '--expires-at', '2026-11-21T09:59:59Z'], /is not in the future/],
      ['not RFC 3339', ['auth', 'add-token', '--path', 'processes/svc', '--expires-at', 'tomorrow'], /not an RFC 3339 time/],
      ['long description', ['auth', 'add-token', '--path', 'processes/svc', '--description', 'x'.repeat(257)], /at most 256 characters/],
      ['unknown option', ['auth', 'add-token', '--path', 'processes/svc', '--bogus'], /unknown option '--bogus' \(see svc auth add-token --help\)/],
      ['a token-looking unknown option is not echoed', ['auth', 'add-token', '--path', 'processes/svc', '-Xsecret-looking-token'], /not shown, in case it is a token/],
      ['missing option value', ['auth', 'add-token', '--topic-hierarchy'], /argument missing \(see svc auth add-token --help\)/],
      ['bad output format', ['auth', 'show', '-o', 'xml'], /Allowed choices are table, text, json, yaml, wcmp2\. \(see svc auth show --help\)/],
      ['an argument where none is taken', ['auth', 'remove-tokens', '--path', 'processes/svc', 'extra'], /svc auth remove-tokens takes no argument: a scope goes in a flag, one of --topic-hierarchy T, --metadata-id M or --path P/],
      ['a scope given as an argument', ['auth', 'show', 'origin.a.wis2.mw-met.data.core'], /svc auth show takes the scope as a flag, not as an argument: give --topic-hierarchy origin\.a\.wis2\.mw-met\.data\.core/],
      ['a dataset given as an argument', ['auth', 'close', 'urn:wmo:md:mw-met:x'], /give --metadata-id urn:wmo:md:mw-met:x/],
      ['a token after the token', ['auth', 'add-token', '--path', 'processes/svc', T1, T2], /svc auth add-token takes one argument, the token; the scope goes in a flag/],
      ['unknown command', ['auth', 'add-tokens'], /unknown command 'add-tokens' \(Did you mean add-token\?\) \(see svc auth --help\)/],
      ['neither token nor identity', ['auth', 'has-access-topic', '--path', 'processes/svc'], /give either a token or --user USER .*, or --from ADDRESS/],
      ['both token and identity', ['auth', 'has-access-topic', '--path', 'processes/svc', 'svc_x', '--user', 'alice'], /give either a token or --user USER/],
      ['--group without --user', ['auth', 'has-access-topic', '--path', 'processes/svc', 'svc_x', '--group', 'ops'], /--group goes with --user/],
      ['add-subject with neither --user nor --group', ['auth', 'add-subject', '--path', 'processes/svc'], /give exactly one of --user USER or --group GROUP/],
      ['add-subject with both', ['auth', 'add-subject', '--path', 'processes/svc', '--user', 'a', '--group', 'b'], /give exactly one of --user USER or --group GROUP/],
      ['a subject name with a control character', ['auth', 'add-subject', '--path', 'processes/svc', '--user', 'a\u0007b'], /without control characters/],
      ['bad namespace name', ['-n', 'Not_A_Namespace', 'auth', 'show'], /-n\/--namespace: "Not_A_Namespace" is not a namespace name/],
      ['bad request timeout', ['--request-timeout', 'soon', 'auth', 'show'], /--request-timeout: "soon" is not a duration/],
      ['a network with host bits set', ['auth', 'add-network', '--path', 'data', '--cidr', '203.0.113.9/24'], /--cidr: "203\.0\.113\.9\/24" has host bits set: use 203\.0\.113\.0\/24 \(nothing was changed\)/],
      ['an address for a network', ['auth', 'add-network', '--path', 'data', '--cidr', '203.0.113.7'], /is an address, not a network: use 203\.0\.113\.7\/32 for this one address/],
      ['an IPv4-mapped IPv6 network', ['auth', 'add-network', '--path', 'data', '--cidr', '::ffff:203.0.113.0/120'], /is an IPv4 network written as IPv6: use 203\.0\.113\.0\/24/],
      ['IPv6 not in canonical form', ['auth', 'add-network', '--path', 'data', '--cidr', '2001:0DB8::/32'], /use 2001:db8::\/32/],
      ['one bad network among good ones', ['auth', 'add-network', '--path', 'data', '--cidr', '192.0.2.0/24', '--cidr', 'gateway'], /--cidr: "gateway" is not a network/],
      ['remove-network with a network in another form', ['auth', 'remove-network', '--topic-hierarchy', TOPIC, '--cidr', '10.1.2.3/8'], /use 10\.0\.0\.0\/8/],
      ['add-network without a network', ['auth', 'add-network', '--path', 'data'], /give --cidr CIDR \(repeat it for more\) or --from-file FILE/],
      ['remove-network without a network', ['auth', 'remove-network', '--path', 'data'], /give --cidr CIDR/],
      ['--description without --cidr', ['auth', 'add-network', '--path', 'data', '--from-file', '-', '--description', 'd'], /--description describes the networks of --cidr/],
      ['a list file that is not there', ['auth', 'add-network', '--path', 'data', '--from-file', '/nonexistent/svc-networks.txt'], /--from-file: cannot read \/nonexistent\/svc-networks\.txt: ENOENT/],
      ['an address with a port', ['auth', 'has-access-topic', '--path', 'data', '--from', '203.0.113.7:80'], /--from: "203\.0\.113\.7:80" is not an IP address/],
      ['--from with a token and --user', ['auth', 'has-access-topic', '--path', 'data', 'svc_x', '--user', 'a', '--from', '203.0.113.7'], /give either a token or --user USER/],
    ])('%s: exit 2', async (_name, args, pattern) => {
      const r = await refused(args as string[], 2, pattern as RegExp);
      expect(r.stderr).not.toContain('secret-looking');
    });

    it('a store that is not there: exit 1 with what to do', async () => {
      const before = await fixture.state();
      const r = await svc([...fixture.missingStoreArgs(), 'auth', 'add-token', '--topic-hierarchy', TOPIC, T2]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^error: [^\n]*(not found|does not exist)[^\n]*\n$/);
      expect(await fixture.state()).toEqual(before);
      expect((await svc([...fixture.missingStoreArgs(), 'auth', 'show'])).code).toBe(1);
    });

    it('global flags work before and after the subcommand', async () => {
      const after = await svc(['auth', 'show', '-o', 'json', ...globals]);
      const before = await svc([...globals, 'auth', 'show', '-o', 'json']);
      expect(after).toEqual(before);
      expect(after.code).toBe(0);
    });
  });

  describe(`import a wis2box-auth store (${fixture.name})`, () => {
    let dir: string;
    let store: string;
    const DL = ['--path', 'wis2downloader'];
    beforeAll(() => {
      dir = tempDir('svc-import-');
      store = join(dir, 'auth.db');
      makeWis2boxAuthStore(store, IMPORT_ROWS);
      writeFileSync(join(dir, 'not-a-store.db'), 'this is not an SQLite file\n');
    });
    afterAll(() => removeDir(dir));

    it('refuses a store with rows it cannot carry over as they protected: every one named, exit 2, nothing written', async () => {
      const before = await fixture.state();
      const r = await cli(['auth', 'import', store]);
      expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 2, stdout: '' });
      const lines = r.stderr.split('\n');
      expect(lines[0]).toMatch(/^row 7 \(topic "mw met\.data"\): fits no scope kind \(invalid topic hierarchy "mw met\.data"/);
      expect(lines[1]).toBe('row 8 (topic "mw-word"): wis2box-auth closed every URL containing it; path mw-word closes it at the root, topic mw-word as a whole segment under /data and a "."-level of a collection id; no scope closes it:');
      expect(lines[2]).toMatch(/^ {4}as a ":"-part of a metadata id \(\/oapi\/collections\/urn:…:mw-word:…/);
      expect(r.stderr).toMatch(/\nerror: 2 rows of \S+ cannot be imported as they protected \(above\): pass --accept-narrower to import the rest and keep the narrower protection shown; nothing was written\n$/);
      expect(await fixture.state()).toEqual(before);
    });

    it('--accept-narrower --dry-run says what it would import and writes nothing; what it skips and keeps narrower on stderr', async () => {
      const before = await fixture.state();
      const r = await cli(['auth', 'import', store, '--dry-run', '--accept-narrower']);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/^path wis2downloader \(topic wis2downloader\): 2 tokens would be imported/m);
      expect(r.stdout).toMatch(/^path mw-word \(topic mw-word\): 1 token would be imported/m);
      expect(r.stdout).toMatch(/^topic mw-word \(topic mw-word\): 1 token would be imported/m);
      expect(r.stdout).toMatch(/Dry run: nothing was written\. 7 scopes/);
      expect(r.stderr).toMatch(/^row 7 \(topic "mw met\.data"\): fits no scope kind \([^\n]+ - skipped\n/);
      expect(r.stderr).toMatch(/^row 8 \(topic "mw-word"\): [^\n]+ \(imported so\); no scope closes it:$/m);
      expect(await fixture.state()).toEqual(before);
    });

    it('imports every row into the scopes its topic maps to, keeps the PBKDF2 hashes, and a second run changes nothing', async () => {
      const r = await cli(['auth', 'import', store, '--accept-narrower', '-o', 'json']);
      expect(r.code).toBe(0);
      const out = JSON.parse(r.stdout) as { scopes: { scope: { kind: string; value: string }; imported: number }[]; skipped: { topic: string; rows: number[] }[]; narrower: { topic: string; rows: number[]; notClosed: string[] }[] };
      expect(out.scopes.map((x) => [x.scope.kind, x.scope.value, x.imported]).sort()).toEqual([
        ['dataset', 'urn:wmo:md:mw-met:obs', 1], ['path', 'collections/stations', 1], ['path', 'mw-word', 1], ['path', 'processes/wis2box', 1],
        ['path', 'wis2downloader', 2], ['topic', 'mw-met.data.core.weather', 1], ['topic', 'mw-word', 1],
      ]);
      expect(out.skipped.map((x) => [x.topic, x.rows])).toEqual([['"mw met.data"', [7]]]);
      expect(out.narrower.map((x) => [x.topic, x.rows, x.notClosed.length])).toEqual([['"mw-word"', [8], 3]]);
      const objects = await fixture.objects();
      const tokens = objects.flatMap((o) => (o.spec as { tokens: { id: string; hash: string; description?: string }[] }).tokens);
      expect(tokens).toHaveLength(8);
      for (const t of tokens) {
        expect(t.hash).toMatch(/^pbkdf2-sha256:100000:[0-9a-f]{48}:[0-9a-f]{64}$/);
        expect(t.id).toBe(t.hash.slice(-64, -52));
        expect(t.description).toBe('imported from wis2box-auth');
      }
      const dump = await fixture.dump();
      for (const row of IMPORT_ROWS) expect(dump.includes(row.token)).toBe(false);
      expect((r.stdout + r.stderr).includes(IMPORT_ROWS[0]!.token)).toBe(false);
      const before = await fixture.state();
      const again = await cli(['auth', 'import', store, '--accept-narrower']);
      expect(again.code).toBe(0);
      expect(again.stdout).toMatch(/^path wis2downloader \(topic wis2downloader\): nothing to import, 2 already there$/m);
      expect(await fixture.state()).toEqual(before);
    });

    it('names every scope that cannot take the import, not only the first; nothing written', async () => {
      expect((await cli(['auth', 'public', ...DL])).code).toBe(0);
      expect((await cli(['auth', 'public', '--path', 'mw-word'])).code).toBe(0);
      const before = await fixture.state();
      const r = await cli(['auth', 'import', store, '--accept-narrower']);
      expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 1, stdout: '' });
      expect(r.stderr).toMatch(/^path:wis2downloader is public: take that back first/m);
      expect(r.stderr).toMatch(/^path:mw-word is public: take that back first/m);
      expect(r.stderr).toMatch(/\nerror: 2 scopes cannot take the import \(above\); nothing was written\n$/);
      expect(await fixture.state()).toEqual(before);
    });

    it('has-access-topic, show and remove-token know imported tokens (short ones included)', async () => {
      expect((await cli(['auth', 'import', store, '--accept-narrower'])).code).toBe(0);
      // A token with spaces and other than ASCII, as wis2box-auth took it, in both scopes of its one-word topic.
      expect((await cli(['auth', 'has-access-topic', '--path', 'mw-word/x', IMPORT_ROWS[7]!.token])).code).toBe(0);
      expect((await cli(['auth', 'has-access-topic', '--topic-hierarchy', 'mw-word.x', IMPORT_ROWS[7]!.token])).code).toBe(0);
      const own = await cli(['auth', 'has-access-topic', ...DL, 'mytoken']);
      expect(own.code).toBe(0);
      expect(own.stdout).toMatch(/^granted: token [0-9a-f]{12} \(imported\) is a valid token of path:wis2downloader\n$/);
      expect((await cli(['auth', 'has-access-topic', '--path', 'wis2downloader/subscriptions', IMPORT_ROWS[1]!.token])).code).toBe(0);
      expect((await cli(['auth', 'has-access-topic', '--metadata-id', 'urn:wmo:md:mw-met:obs', IMPORT_ROWS[2]!.token])).code).toBe(0);
      expect((await cli(['auth', 'has-access-topic', '--topic-hierarchy', 'mw-met.data.core.weather.x', IMPORT_ROWS[3]!.token])).code).toBe(0);
      expect((await cli(['auth', 'has-access-topic', '--path', 'processes/wis2box-synop2bufr', IMPORT_ROWS[4]!.token])).code).toBe(0);
      expect((await cli(['auth', 'has-access-topic', '--path', 'collections/stations', IMPORT_ROWS[5]!.token])).code).toBe(0);
      const other = await cli(['auth', 'has-access-topic', ...DL, IMPORT_ROWS[4]!.token, '-o', 'json']);
      expect([other.code, JSON.parse(other.stdout).outcome]).toEqual([1, 'insufficient-scope']);
      const wrong = await cli(['auth', 'has-access-topic', ...DL, 'mytoken2']);
      expect([wrong.code, /not a token of any scope/.test(wrong.stdout)]).toEqual([1, true]);
      const table = await cli(['auth', 'show', ...DL]);
      expect(table.stdout).toMatch(/[0-9a-f]{12} \(imported\)/);
      const json = JSON.parse((await cli(['auth', 'show', ...DL, '-o', 'json'])).stdout) as { scopes: { tokens: { id: string; imported?: boolean }[] }[] };
      expect(json.scopes[0]!.tokens.map((t) => t.imported)).toEqual([true, true]);
      const removed = await cli(['auth', 'remove-token', ...DL, 'mytoken', '-o', 'json']);
      expect(removed.code).toBe(0);
      const gone = (JSON.parse(removed.stdout) as { removed: string[] }).removed[0]!;
      expect(json.scopes[0]!.tokens.map((t) => t.id)).toContain(gone);
      expect((await cli(['auth', 'has-access-topic', ...DL, 'mytoken'])).code).toBe(1);
      expect((await cli(['auth', 'has-access-topic', ...DL, IMPORT_ROWS[1]!.token])).code).toBe(0);
      await refused(['auth', 'remove-token', ...DL, 'mytoken'], 1, /is not a token of path:wis2downloader/);
    });

    it('a file that is not a wis2box-auth store, or none: exit 2, nothing changed', async () => {
      await refused(['auth', 'import', join(dir, 'not-a-store.db')], 2, /is not a wis2box-auth store/);
      await refused(['auth', 'import', join(dir, 'missing.db')], 2, /cannot read .*missing\.db: ENOENT/);
    });
  });

  describe(`add-network and remove-network (${fixture.name})`, () => {
    const DATA = ['--path', 'data'];
    let listDir = '';
    beforeAll(() => {
      listDir = tempDir('svc-networks-');
    });
    afterAll(() => removeDir(listDir));
    const listFile = (name: string, text: string) => {
      const file = join(listDir, name);
      writeFileSync(file, text);
      return file;
    };

    it('a network closes a scope, show lists it, has-access-topic answers by address; remove-network opens the scope again', async () => {
      const added = scrubbed(await cli(['auth', 'add-network', ...DATA, '--cidr', '203.0.113.7/32', '--description', 'Global Cache']));
      expect(added).toEqual({ code: 0, stdout: 'path data grants 203.0.113.7/32; the store now says Closed, 0 tokens, 1 network (<store>)\n', stderr: expect.stringMatching(/^New scope: path data [^\n]+\nNot in force yet: [^\n]+\n$/) });
      const name = expect.stringMatching(/^path-data-[0-9a-f]{8}$/);
      expect(await fixture.objects()).toEqual([{ name, spec: { path: 'data', tokens: [], networks: [{ cidr: '203.0.113.7/32', description: 'Global Cache' }] } }]);
      const before = await fixture.state();
      expect(scrubbed(await cli(['auth', 'add-network', ...DATA, '--cidr', '203.0.113.7/32'])).stdout).toBe('path data already granted 203.0.113.7/32; still Closed, 0 tokens, 1 network (<store>)\n');
      expect(await fixture.state()).toEqual(before);
      const shown = JSON.parse((await cli(['auth', 'show', ...DATA, '-o', 'json'])).stdout).scopes[0];
      expect(shown).toMatchObject({ state: 'Closed', closedBy: 'networks', tokenCount: 0, networks: [{ cidr: '203.0.113.7/32', description: 'Global Cache', objects: [name] }] });
      expect((await cli(['auth', 'show', ...DATA, '-o', 'text'])).stdout).toMatch(/^path data: Closed, 0 tokens, 1 network; object path-data-[0-9a-f]{8}\n {2}network 203\.0\.113\.7\/32 {2}"Global Cache"\n$/);
      expect((await cli(['auth', 'show'])).stdout).toMatch(/^KIND +SCOPE +STATE +TOKENS +NETWORKS +ID[^\n]*\n(.*\n)*path +data +Closed +0 +1 +- /m);
      const granted = await cli(['auth', 'has-access-topic', ...DATA, '--from', '203.0.113.7']);
      expect(granted).toEqual({ code: 0, stdout: 'granted: address 203.0.113.7 is in network 203.0.113.7/32 of path:data\n', stderr: '' });
      expect((await cli(['auth', 'has-access-topic', ...DATA, '--from', '::ffff:203.0.113.7'])).code).toBe(0);
      const denied = await cli(['auth', 'has-access-topic', ...DATA, '--from', '203.0.113.8']);
      expect(denied).toEqual({ code: 1, stdout: 'denied: address 203.0.113.8 is in no network of path:data; path:data is closed and no token was given\n', stderr: '' });
      const json = JSON.parse((await cli(['auth', 'has-access-topic', '--path', 'data/2026-11-21', '--from', '203.0.113.7', '-o', 'json'])).stdout);
      expect(json).toMatchObject({ granted: true, outcome: 'granted-network', address: '203.0.113.7', network: '203.0.113.7/32', grantedBy: 'path:data', governing: ['path:data'] });
      const removed = scrubbed(await cli(['auth', 'remove-network', ...DATA, '--cidr', '203.0.113.7/32']));
      expect(removed).toEqual({ code: 0, stdout: 'path data no longer grants 203.0.113.7/32; the store now says Open, 0 tokens (<store>)\n', stderr: expect.stringMatching(IN_FORCE_LAST) });
      expect(removed.stderr).toMatch(/may allow what this takes away for up to 30 s more/);
      expect(await fixture.objects()).toEqual([{ name, spec: { path: 'data', tokens: [] } }]);
      expect((await cli(['auth', 'has-access-topic', ...DATA, '--from', '203.0.113.8'])).stdout).toBe('granted: path:data is open: no closed scope governs it, so no token is needed\n');
    });

    it('the most specific closed scope governs: a network on a.b never opens a.b.c closed by its own token; an address no network holds falls through to the token', async () => {
      expect((await cli(['auth', 'add-network', '--topic-hierarchy', 'a.b', '--cidr', '198.51.100.0/24', '--cidr', '2001:db8:5::/48'])).code).toBe(0);
      expect((await cli(['auth', 'add-token', '--topic-hierarchy', 'a.b.c', T1])).code).toBe(0);
      const below = await cli(['auth', 'has-access-topic', '--topic-hierarchy', 'a.b.x', '--from', '2001:db8:5::9']);
      expect(below).toEqual({ code: 0, stdout: 'granted: address 2001:db8:5::9 is in network 2001:db8:5::/48 of topic:a.b, which governs topic:a.b.x\n', stderr: '' });
      const closedChild = await cli(['auth', 'has-access-topic', '--topic-hierarchy', 'a.b.c.d', '--from', '198.51.100.5']);
      expect(closedChild.code).toBe(1);
      expect(closedChild.stdout).toBe('denied: address 198.51.100.5 is in no network of topic:a.b.c; topic:a.b.c.d is closed (governed by topic:a.b.c) and no token was given\n');
      const withToken = await cli(['auth', 'has-access-topic', '--topic-hierarchy', 'a.b.c.d', T1, '--from', '198.51.100.5']);
      expect(withToken.code).toBe(0);
      expect(withToken.stdout).toMatch(/^granted: address 198\.51\.100\.5 is in no network of topic:a\.b\.c; token [0-9a-f]{12} is a valid token of topic:a\.b\.c, which governs topic:a\.b\.c\.d\n$/);
      expect((await cli(['auth', 'has-access-topic', '--topic-hierarchy', 'a.b', '--from', '203.0.113.1'])).code).toBe(1);
    });

    it('--from-file: one network a line with its description, "#" comments; --replace makes the list the whole list', async () => {
      const first = listFile('gs.txt', '# Global Services\n203.0.113.7/32  Global Cache A\n198.51.100.0/24 Global Cache B  # comment\n\n2001:db8:7::/48\n');
      const r = scrubbed(await cli(['auth', 'add-network', ...DATA, '--from-file', first]));
      expect(r).toEqual({ code: 0, stdout: 'path data grants 203.0.113.7/32, 198.51.100.0/24, 2001:db8:7::/48; the store now says Closed, 0 tokens, 3 networks (<store>)\n', stderr: expect.stringMatching(IN_FORCE_LAST) });
      const next = listFile('gs2.txt', '203.0.113.7/32  Global Cache A (Offenbach)\n2001:db8:7::/48\n192.0.2.0/24 Global Broker\n');
      const replaced = scrubbed(await cli(['auth', 'add-network', ...DATA, '--from-file', next, '--replace']));
      expect(replaced.stdout).toBe('path data grants 192.0.2.0/24; describes 203.0.113.7/32 anew; no longer grants 198.51.100.0/24; already granted 2001:db8:7::/48; the store now says Closed, 0 tokens, 3 networks (<store>)\n');
      expect((await fixture.objects())[0]!.spec).toEqual({
        path: 'data', tokens: [],
        networks: [{ cidr: '203.0.113.7/32', description: 'Global Cache A (Offenbach)' }, { cidr: '2001:db8:7::/48' }, { cidr: '192.0.2.0/24', description: 'Global Broker' }],
      });
      const before = await fixture.state();
      expect((await cli(['auth', 'add-network', ...DATA, '--from-file', next, '--replace'])).stdout).toMatch(/^path data already granted 203\.0\.113\.7\/32, 2001:db8:7::\/48, 192\.0\.2\.0\/24; still Closed/);
      expect(await fixture.state()).toEqual(before);
      const stdin = await cli(['auth', 'add-network', ...DATA, '--from-file', '-', '-o', 'json'], { stdin: '10.0.0.0/8 lab\n' });
      expect(JSON.parse(stdin.stdout)).toMatchObject({ added: ['10.0.0.0/8'], state: 'Closed', closedBy: 'networks', networks: expect.arrayContaining([{ cidr: '10.0.0.0/8', description: 'lab' }]) });
      const bad = listFile('bad.txt', '203.0.113.7/32\n# fine so far\n203.0.113.9/24 Global Cache\n2001:DB8::/32\n');
      const refusedFile = await refused(['auth', 'add-network', ...DATA, '--from-file', bad], 2, /bad\.txt:3: "203\.0\.113\.9\/24" has host bits set: use 203\.0\.113\.0\/24; .*bad\.txt:4: "2001:DB8::\/32" is not written in canonical form: use 2001:db8::\/32 \(nothing was changed\)/);
      expect(refusedFile.stderr).not.toContain('bad.txt:1');
      await refused(['auth', 'add-network', ...DATA, '--from-file', listFile('empty.txt', '# nothing yet\n'), '--replace'], 2, /lists no network: to take every network away use svc .*auth remove-network/);
    });

    it('edits every object that lists a network, hand-written ones too; a network the scope lacks is refused (exit 1, unchanged)', async () => {
      await fixture.put(handWritten('hand-a', { topicHierarchy: 'a.b', tokens: [], networks: [{ cidr: '203.0.113.0/24', description: 'x' }, { cidr: '2001:db8::/32' }] }));
      await fixture.put(handWritten('hand-b', { topicHierarchy: 'a.b', tokens: [record(T1)], networks: [{ cidr: '203.0.113.0/24' }] }));
      await refused(['auth', 'remove-network', '--topic-hierarchy', 'a.b', '--cidr', '192.0.2.0/24'], 1, /192\.0\.2\.0\/24 is not a network of topic:a\.b: list them with svc .*auth show --topic-hierarchy a\.b \(nothing was changed\)/);
      expect((await cli(['auth', 'remove-network', '--topic-hierarchy', 'a.b', '--cidr', '203.0.113.0/24'])).stdout).toMatch(/no longer grants 203\.0\.113\.0\/24; the store now says Closed, 1 token, 1 network/);
      expect(await fixture.objects()).toEqual([
        { name: 'hand-a', spec: { topicHierarchy: 'a.b', tokens: [], networks: [{ cidr: '2001:db8::/32' }] } },
        { name: 'hand-b', spec: { topicHierarchy: 'a.b', tokens: [record(T1)] } },
      ]);
      expect((await cli(['auth', 'remove-tokens', '--topic-hierarchy', 'a.b'])).stdout).toMatch(/it stays closed \(it grants networks; svc .*auth show lists them\)/);
      expect((await cli(['auth', 'open', '--topic-hierarchy', 'a.b'])).stdout).toMatch(/Closed, 0 tokens, 1 network/);
    });

    it('public and networks exclude each other (exit 2, nothing changed); more than 256 networks in an object fail (exit 1, unchanged)', async () => {
      expect((await cli(['auth', 'public', '--path', 'processes/station-info'])).code).toBe(0);
      await refused(['auth', 'add-network', '--path', 'processes/station-info', '--cidr', '203.0.113.7/32'], 2, /is public \(every method open\): take that back first with public --off, then add the network/);
      expect((await cli(['auth', 'add-network', '--path', 'processes/svc', '--cidr', '203.0.113.7/32'])).code).toBe(0);
      await refused(['auth', 'public', '--path', 'processes/svc'], 2, /cannot be public while it has networks \(remove-network\)/);
      const many = listFile('many.txt', Array.from({ length: 257 }, (_, i) => `10.${i >> 8}.${i & 255}.0/24`).join('\n'));
      await refused(['auth', 'add-network', ...DATA, '--from-file', many], 1, /would hold 257 networks, more than the 256 an object may/);
    });

    it('-o wcmp2 says that download is limited to the granted networks, and how to present a token otherwise', async () => {
      expect((await cli(['auth', 'add-network', '--metadata-id', 'urn:wmo:md:mw-met:core', '--cidr', '203.0.113.7/32'])).code).toBe(0);
      const { security } = JSON.parse((await cli(['auth', 'show', '--metadata-id', 'urn:wmo:md:mw-met:core', '-o', 'wcmp2'])).stdout) as { security: Record<string, { description: string }> };
      expect(Object.keys(security)).toEqual(['default', 'query', 'basic']);
      for (const s of Object.values(security)) expect(s.description).toMatch(/Download of the dataset urn:wmo:md:mw-met:core is limited to the networks the data provider grants, such as the WIS2 Global Services: fetch it from a WIS2 Global Cache, or present a token/);
      expect(security.default!.description).toMatch(/Authorization: Bearer <token>/);
    });

    it('concurrent add-network and add-token on one scope: no grant is lost', async () => {
      const results = await Promise.all([
        ...Array.from({ length: 8 }, (_, i) => cli(['auth', 'add-network', '--topic-hierarchy', TOPIC, '--cidr', `192.0.2.${i}/32`])),
        ...Array.from({ length: 4 }, (_, i) => cli(['auth', 'add-token', '--topic-hierarchy', TOPIC, `concurrent-token-${String(i).padStart(4, '0')}`])),
      ]);
      expect(results.map((r) => r.code)).toEqual(results.map(() => 0));
      const [only] = await fixture.objects();
      const spec = only!.spec as ProtectedScope['spec'];
      expect(spec.networks?.map((n) => n.cidr).sort()).toEqual(Array.from({ length: 8 }, (_, i) => `192.0.2.${i}/32`).sort());
      expect(spec.tokens).toHaveLength(4);
    });
  });

  describe(`public (${fixture.name})`, () => {
    const SI = ['--path', 'processes/station-info'];
    it('sets and clears public on a path scope; show marks it; again changes nothing', async () => {
      const on = scrubbed(await cli(['auth', 'public', ...SI]));
      expect(on).toEqual({ code: 0, stdout: 'path processes/station-info is public; the store now says Open, public (every method) (<store>)\n', stderr: expect.stringMatching(IN_FORCE_LAST) });
      expect(await fixture.objects()).toEqual([{ name: expect.stringMatching(/^path-processes-station-info-[0-9a-f]{8}$/), spec: { path: 'processes/station-info', tokens: [], public: true } }]);
      const before = await fixture.state();
      expect((await cli(['auth', 'public', ...SI])).stdout).toMatch(/was already public/);
      expect(await fixture.state()).toEqual(before);
      expect(JSON.parse((await cli(['auth', 'show', ...SI, '-o', 'json'])).stdout).scopes[0]).toMatchObject({ state: 'Open', public: true, tokenCount: 0 });
      expect((await cli(['auth', 'show'])).stdout).toMatch(/^path +processes\/station-info +Open \(public\) /m);
      expect((await cli(['auth', 'has-access-topic', ...SI, 'any-token-at-all-0001'])).code).toBe(0);
      await refused(['auth', 'show', ...SI, '-o', 'wcmp2'], 1, /is public in .*: its links need no security object/);
      const off = JSON.parse((await cli(['auth', 'public', ...SI, '--off', '-o', 'json'])).stdout) as { public: boolean; state: string };
      expect(off).toMatchObject({ public: false, state: 'Closed' });
      expect((await fixture.objects())[0]!.spec).toEqual({ path: 'processes/station-info', tokens: [] });
      expect((await cli(['auth', 'has-access-topic', ...SI, 'any-token-at-all-0001'])).code).toBe(1);
    });

    it('refuses a scope with tokens, subjects or closed: true, and a scope that is not a path (exit 2, nothing changed)', async () => {
      expect((await cli(['auth', 'add-token', '--path', 'processes/a', T1])).code).toBe(0);
      await refused(['auth', 'public', '--path', 'processes/a'], 2, /processes\/a cannot be public while it has tokens/);
      expect((await cli(['auth', 'add-subject', '--path', 'processes/b', '--user', 'alice'])).code).toBe(0);
      await refused(['auth', 'public', '--path', 'processes/b'], 2, /cannot be public while it has subjects/);
      expect((await cli(['auth', 'close', '--path', 'processes/c'])).code).toBe(0);
      await refused(['auth', 'public', '--path', 'processes/c'], 2, /cannot be public while it has closed: true/);
      await refused(['auth', 'public', '--topic-hierarchy', 'a.b'], 2, /only a path scope can be public/);
    });

    it('close, add-subject and add-token refuse a public scope up front (exit 2, nothing changed)', async () => {
      expect((await cli(['auth', 'public', ...SI])).code).toBe(0);
      await refused(['auth', 'close', ...SI], 2, /processes\/station-info is public \(every method open\): take that back first with public --off/);
      await refused(['auth', 'add-subject', ...SI, '--group', 'ops'], 2, /is public \(every method open\): take that back first with public --off/);
      await refused(['auth', 'add-token', ...SI, T1], 2, /is public \(every method open\)/);
    });

    it('a public process that a token of a shorter prefix covers: public, show and has-access-topic all say closed, as svc-auth enforces', async () => {
      expect((await cli(['auth', 'add-token', '--path', 'processes/station', T3])).code).toBe(0);
      const on = await cli(['auth', 'public', ...SI]);
      expect(on.stdout).toMatch(/^path processes\/station-info is public; the store now says Closed, 0 tokens \(declared public, but path:processes\/station covers it/);
      expect(JSON.parse((await cli(['auth', 'show', ...SI, '-o', 'json'])).stdout).scopes[0]).toMatchObject({ state: 'Closed', closedBy: 'covered', governing: ['path:processes/station'] });
      expect((await cli(['auth', 'show'])).stdout).toMatch(/^path +processes\/station-info +Closed \(covered\) /m);
      expect((await cli(['auth', 'has-access-topic', ...SI, 'any-token-at-all-0001'])).code).toBe(1);
      expect((await cli(['auth', 'has-access-topic', ...SI, T3])).code).toBe(0);
      expect((await cli(['auth', 'remove-tokens', '--path', 'processes/station'])).code).toBe(0);
      expect(JSON.parse((await cli(['auth', 'show', ...SI, '-o', 'json'])).stdout).scopes[0]).toMatchObject({ state: 'Open', public: true });
    });

    it('a path spelt from the root or below the API prefix is read as the special form, and the CLI says so on stderr', async () => {
      const r = await cli(['auth', 'public', '--path', '/oapi/processes/station-info']);
      expect({ code: r.code, stderr: r.stderr.split('\n')[0] }).toEqual({ code: 0, stderr: '--path /oapi/processes/station-info is read as processes/station-info' });
      expect((await fixture.objects()).map((o) => o.spec)).toEqual([{ path: 'processes/station-info', tokens: [], public: true }]);
      const t = await cli(['auth', 'add-token', '--path', '/processes/svc', T3]);
      expect({ code: t.code, stderr: t.stderr.split('\n')[0] }).toEqual({ code: 0, stderr: '--path /processes/svc is read as processes/svc' });
      const s = await cli(['--api-prefix', '/api/v1', 'auth', 'close', '--path', 'api/v1/collections/stations']);
      expect({ code: s.code, stderr: s.stderr.split('\n')[0] }).toEqual({ code: 0, stderr: '--path api/v1/collections/stations is read as collections/stations' });
    });

    it('a path at or above a prefix may be closed, never public (exit 2, nothing changed)', async () => {
      await refused(['auth', 'public', '--path', 'oapi'], 2, /--path oapi cannot be public: oapi is at or above the prefix \/oapi/);
      await refused(['auth', 'public', '--path', 'DATA'], 2, /at or above the prefix \/data/);
      await refused(['--api-prefix', '/api/v1', 'auth', 'public', '--path', 'api'], 2, /at or above the prefix \/api\/v1/);
      expect((await cli(['auth', 'close', '--path', 'oapi'])).code).toBe(0);
      expect((await cli(['auth', 'public', '--path', 'oapi/jobs/1'])).code).toBe(0);
    });

    it('-o wcmp2 of a closed prefix path names the path and offers Basic', async () => {
      expect((await cli(['auth', 'close', '--path', 'wis2downloader'])).code).toBe(0);
      const { security } = JSON.parse((await cli(['auth', 'show', '--path', 'wis2downloader', '-o', 'wcmp2'])).stdout) as { security: Record<string, { description: string }> };
      expect(Object.keys(security)).toEqual(['default', 'query', 'basic']);
      expect(security.default!.description).toMatch(/Access to \/wis2downloader and everything below it is controlled/);
      expect(security.basic!.description).toMatch(/For files under \/wis2downloader/);
    });
  });

  it(`createdAt uses the clock (${fixture.name})`, async () => {
    const r = await cli(['auth', 'add-token', '--path', 'processes/svc', T1, '-o', 'json'], { now: FIXED_NOW + 3_600_500 });
    expect(JSON.parse(r.stdout).createdAt).toBe('2026-11-21T11:00:00Z');
  });
}

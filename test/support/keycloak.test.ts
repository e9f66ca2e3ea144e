// The Keycloak harness's pure parts: which Java it picks (and how it fails without one), where the zip comes from and
// how a download is checked, and what it reads of a realm file, on the svc realm the browser suites import. Starting
// Keycloak itself is test/e2e/keycloak.test.ts.
import { describe, it, expect } from '@jest/globals';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { downloadVerified, ensureJava, findJava, javaMajor, keycloakSkipReason, keycloakZipUrl, mavenRepository, readRealm } from './keycloak.js';
import { tempDirsPerTest } from './temp-dirs.js';

const tempDir = tempDirsPerTest('svc-keycloak-test-');

/** A fake JDK: bin/java (a script that prints `version` like java -version) and, unless omitted, a release file. */
function fakeJdk(root: string, name: string, version: string, withRelease = true): string {
  const home = join(root, name);
  mkdirSync(join(home, 'bin'), { recursive: true });
  writeFileSync(join(home, 'bin', 'java'), `#!/bin/sh\necho 'openjdk version "${version}" 2025-01-01' >&2\n`);
  chmodSync(join(home, 'bin', 'java'), 0o755);
  if (withRelease) writeFileSync(join(home, 'release'), `IMPLEMENTOR="test"\nJAVA_VERSION="${version}"\n`);
  return home;
}

describe('the Java Keycloak runs on', () => {
  it('reads the major version from the release file, else from java -version; a directory without bin/java is none', () => {
    const root = tempDir();
    expect(javaMajor(fakeJdk(root, 'temurin-25', '25.0.3'))).toBe(25);
    expect(javaMajor(fakeJdk(root, 'old', '1.8.0_392'))).toBe(8);
    expect(javaMajor(fakeJdk(root, 'no-release', '21.0.2', false))).toBe(21);
    mkdirSync(join(root, 'empty'));
    expect(javaMajor(join(root, 'empty'))).toBeUndefined();
  });

  it('takes the newest JDK >= 21 under the JVM directory, and JAVA_HOME first when it is new enough', () => {
    const root = tempDir();
    fakeJdk(root, 'java-17-openjdk-amd64', '17.0.15');
    const j21 = fakeJdk(root, 'jdk-21', '21.0.5');
    const j25 = fakeJdk(root, 'temurin-25-jdk-amd64', '25.0.3');
    const j17 = join(root, 'java-17-openjdk-amd64');
    expect(findJava({}, root)).toEqual({ home: j25, major: 25 });
    expect(findJava({ JAVA_HOME: j21 }, root)).toEqual({ home: j21, major: 21 });
    expect(findJava({ JAVA_HOME: j17 }, root)).toEqual({ home: j25, major: 25 });
    expect(findJava({}, join(root, 'missing'))).toBeUndefined();
  });

  it('SVC_KEYCLOAK_JAVA_HOME is taken as asked, and refused by name when it is too old or no Java', () => {
    const root = tempDir();
    const j21 = fakeJdk(root, 'jdk-21', '21.0.5');
    fakeJdk(root, 'jdk-25', '25.0.3');
    const j17 = fakeJdk(root, 'jdk-17', '17.0.15');
    expect(findJava({ SVC_KEYCLOAK_JAVA_HOME: j21 }, root)).toEqual({ home: j21, major: 21 });
    expect(() => findJava({ SVC_KEYCLOAK_JAVA_HOME: j17 }, root)).toThrow(`SVC_KEYCLOAK_JAVA_HOME=${j17} is Java 17; Keycloak 26.4.7 needs Java >= 21`);
    expect(() => findJava({ SVC_KEYCLOAK_JAVA_HOME: root }, root)).toThrow('no Java installation (no bin/java)');
  });

  it('without one: under CI=true a failure saying what to install; elsewhere a skip only when SVC_SKIP_KEYCLOAK=1 asks', () => {
    const root = tempDir();
    fakeJdk(root, 'java-17-openjdk-amd64', '17.0.15');
    expect(() => ensureJava({ CI: 'true' }, root)).toThrow(/^CI=true: Keycloak 26\.4\.7 needs Java >= 21 and none was found .*install a JDK 21 or newer/);
    expect(() => ensureJava({}, root)).toThrow('SVC_SKIP_KEYCLOAK=1');
    expect(keycloakSkipReason({ CI: 'true', SVC_SKIP_KEYCLOAK: '1' }, root)).toBeUndefined();
    expect(keycloakSkipReason({}, root)).toBeUndefined();
    expect(keycloakSkipReason({ SVC_SKIP_KEYCLOAK: '1' }, root)).toContain('needs Java >= 21');
    fakeJdk(root, 'jdk-25', '25.0.3');
    expect(keycloakSkipReason({ SVC_SKIP_KEYCLOAK: '1' }, root)).toBeUndefined();
  });
});

describe('the Keycloak distribution', () => {
  it('comes from Maven Central, or the mirror SVC_MAVEN_REPOSITORY names', () => {
    expect(keycloakZipUrl(mavenRepository({}))).toBe('https://repo1.maven.org/maven2/org/keycloak/keycloak-quarkus-dist/26.4.7/keycloak-quarkus-dist-26.4.7.zip');
    expect(keycloakZipUrl(mavenRepository({ SVC_MAVEN_REPOSITORY: 'http://127.0.0.1:8081/maven2/' }))).toBe('http://127.0.0.1:8081/maven2/org/keycloak/keycloak-quarkus-dist/26.4.7/keycloak-quarkus-dist-26.4.7.zip');
  });

  it('is kept only when its sha-512 is the pinned one; an HTTP error is named', async () => {
    const body = Buffer.from('not really a zip, but bytes all the same\n'.repeat(1000));
    const server = createServer((req, res) => {
      if (req.url === '/ok.zip') res.end(body);
      else res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const dir = tempDir();
      const sha = createHash('sha512').update(body).digest('hex');
      await downloadVerified(`${base}/ok.zip`, join(dir, 'a.zip'), sha);
      expect(readFileSync(join(dir, 'a.zip')).equals(body)).toBe(true);
      await expect(downloadVerified(`${base}/ok.zip`, join(dir, 'b.zip'), 'f'.repeat(128))).rejects.toThrow(`sha-512 ${sha.slice(0, 16)}… is not the pinned ffffffffffffffff…`);
      await expect(downloadVerified(`${base}/gone.zip`, join(dir, 'c.zip'), sha)).rejects.toThrow(`GET ${base}/gone.zip: HTTP 404`);
      expect(existsSync(join(dir, 'c.zip'))).toBe(false);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});

describe('the svc realm the browser suites import', () => {
  const file = fileURLToPath(new URL('../e2e/fixtures/keycloak-realm-svc.json', import.meta.url));

  it('has alice in partners, bob in observers, carol in no group, each with a password and a verified email', () => {
    const realm = readRealm(file);
    expect(realm.name).toBe('svc');
    expect(Object.values(realm.users).map(({ username, email, groups }) => ({ username, email, groups }))).toEqual([
      { username: 'alice', email: 'alice@example.org', groups: ['partners'] },
      { username: 'bob', email: 'bob@example.org', groups: ['observers'] },
      { username: 'carol', email: 'carol@example.org', groups: [] },
    ]);
    for (const u of Object.values(realm.users)) expect(u.password.length).toBeGreaterThan(8);
    const json = JSON.parse(readFileSync(file, 'utf8')) as { users: { emailVerified: boolean; firstName: string; lastName: string; requiredActions: string[] }[] };
    // Names present and no required action: Keycloak's user profile would otherwise stop the login at an update form.
    for (const u of json.users) expect(u).toMatchObject({ emailVerified: true, firstName: expect.any(String), lastName: expect.any(String), requiredActions: [] });
  });

  it('has the confidential svc-auth (a secret) and the public svc-auth-public, both requiring PKCE S256 and putting group names into the ID token', () => {
    const realm = readRealm(file);
    expect(realm.clients['svc-auth']).toEqual({ clientId: 'svc-auth', publicClient: false, secret: 'svc-auth-test-client-secret' });
    expect(realm.clients['svc-auth-public']).toEqual({ clientId: 'svc-auth-public', publicClient: true });
    type Client = { clientId: string; attributes: Record<string, string>; redirectUris: string[]; protocolMappers: { protocolMapper: string; config: Record<string, string> }[] };
    const clients = (JSON.parse(readFileSync(file, 'utf8')) as { clients: Client[] }).clients;
    for (const c of clients) {
      expect(c.redirectUris).toEqual(['http://127.0.0.1/*', 'http://localhost/*']);
      expect(c.attributes['post.logout.redirect.uris']).toBe('+');
      expect(c.attributes['pkce.code.challenge.method']).toBe('S256');
      expect(c.protocolMappers).toContainEqual({ name: 'groups', protocol: 'openid-connect', protocolMapper: 'oidc-group-membership-mapper', config: expect.objectContaining({ 'claim.name': 'groups', 'full.path': 'false', 'id.token.claim': 'true' }) });
    }
  });

  it('names a user without a password credential', () => {
    const bad = join(tempDir(), 'realm.json');
    writeFileSync(bad, JSON.stringify({ realm: 'x', users: [{ username: 'dave', credentials: [] }] }));
    expect(() => readRealm(bad)).toThrow(`${bad}: user dave has no password credential`);
  });
});

// `svc auth import` on stores no wis2box-auth would write (test/cli/suite.ts runs the ordinary ones on every backend):
// each is refused within bounds, with exit 2 and a message that names the problem and cuts long values, and the
// directory it would have written into keeps every byte. Crafted rows carry no secret.
import { afterAll, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdirSync, readdirSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { removeDir, svc, tempDir } from '../../test/cli/harness.js';
import { makeSqliteFile, makeWis2boxAuthStore } from '../../test/support/wis2box-auth-store.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

/** Every file of the directory with its bytes. */
function bytes(dir: string): Record<string, string> {
  return Object.fromEntries(readdirSync(dir).sort().map((n) => [n, readFileSync(join(dir, n)).toString('base64')]));
}

// As wis2box-auth's, but topic without NOT NULL and without text affinity (which would turn 42 into '42').
const TABLE = 'CREATE TABLE auth (salt text PRIMARY KEY, key text NOT NULL, topic)';
const ROW = (topic: string) => `INSERT INTO auth VALUES (randomblob(24), randomblob(32), ${topic});`;

describe('svc auth import refuses what it cannot read within bounds (exit 2, nothing written)', () => {
  let base = '';
  let scopes = '';
  let before: Record<string, string>;
  beforeEach(async () => {
    base = tempDir('svc-import-bounds-');
    dirs.push(base);
    scopes = join(base, 'scopes');
    mkdirSync(scopes);
    // A directory with something in it, so "nothing written" compares real bytes.
    makeWis2boxAuthStore(join(base, 'seed.db'), [{ token: 'seed-token-000000001', topic: 'processes/wis2box' }]);
    expect((await svc(['--dir', scopes, 'auth', 'import', join(base, 'seed.db')])).code).toBe(0);
    before = bytes(scopes);
  });

  async function refused(script: string | ((file: string) => void), pattern: RegExp): Promise<string> {
    const file = join(base, 'crafted.db');
    if (typeof script === 'string') makeSqliteFile(file, script);
    else script(file);
    const r = await svc(['--dir', scopes, 'auth', 'import', file, '--accept-narrower']);
    expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 2, stdout: '' });
    expect(r.stderr).toMatch(pattern);
    expect(bytes(scopes)).toEqual(before);
    return r.stderr;
  }

  it('an auth that is an endless recursive VIEW (a 4 KB file) is refused before a row is read', async () => {
    await refused(
      'CREATE VIEW auth AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT randomblob(24) AS salt, randomblob(32) AS key, \'wis2downloader\' AS topic FROM r;',
      /^error: \S+ is not a wis2box-auth store: its auth is a view, not a table \(wis2box-auth keeps its tokens in a table\); nothing was written\n$/,
    );
  });

  it('a virtual table', async () => {
    await refused('CREATE VIRTUAL TABLE auth USING fts4(salt, key, topic);', /its auth is a virtual table, not a table/);
  });
  it('a generated topic', async () => {
    await refused("CREATE TABLE auth (salt blob, key blob, topic text GENERATED ALWAYS AS ('wis2downloader') VIRTUAL);", /the column topic of its table auth is generated, not stored/);
  });
  it('no table auth', async () => {
    await refused('CREATE TABLE other (a);', /it has no table auth\(salt, key, topic\)/);
  });
  it('a table auth without topic', async () => {
    await refused('CREATE TABLE auth (salt blob, key blob);', /its table auth has no column topic/);
  });

  it('more than 10,000 rows', async () => {
    await refused(
      `${TABLE}; WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r LIMIT 10001) INSERT INTO auth SELECT randomblob(24), randomblob(32), 'wis2downloader' FROM r;`,
      /^error: \S+ holds more than 10000 rows in auth: [^\n]+; nothing was written\n$/,
    );
  });

  it('a file larger than a store can be (64 MiB)', async () => {
    await refused((file) => {
      writeFileSync(file, '');
      truncateSync(file, 64 * 1024 * 1024 + 1);
    }, /^error: \S+ holds 67108865 bytes: a wis2box-auth store is far smaller \(at most 67108864 bytes are read\); nothing was written\n$/);
  });

  it('NULL and non-text topics are reported by row, not imported as "path null"; long values are cut; refused unless --accept-narrower, which skips them', async () => {
    const file = join(base, 'rows.db');
    makeSqliteFile(file, [TABLE, ROW('NULL'), ROW('42'), ROW(`'${'t'.repeat(5000)}'`), "INSERT INTO auth VALUES ('text-salt-not-bytes', randomblob(32), 'wis2downloader');", ROW("'wis2downloader'")].join(';\n'));
    const r = await svc(['--dir', scopes, 'auth', 'import', file, '--accept-narrower', '-o', 'json']);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { skipped: { topic: string; rows: number[]; reason: string }[]; scopes: { scope: { value: string }; imported: number }[] };
    expect(out.skipped).toEqual([
      { topic: '(null)', rows: [1], reason: 'the topic is NULL' },
      { topic: '(integer)', rows: [2], reason: 'the topic is not text but integer' },
      { topic: `"${'t'.repeat(60)}…"`, rows: [3], reason: 'a topic of 5000 characters (at most 512)' },
      { topic: '"wis2downloader"', rows: [4], reason: 'salt and key must be blobs (bytes), not text and blob' },
    ]);
    expect(out.scopes.map((s) => [s.scope.value, s.imported])).toEqual([['wis2downloader', 1]]);
    expect(r.stderr.length).toBeLessThan(2000);
    expect(JSON.stringify(out)).not.toContain('null"');
    const without = await svc(['--dir', scopes, 'auth', 'import', file]);
    expect(without.code).toBe(2);
    expect(without.stderr).toMatch(/^row 1 \(topic \(null\)\): the topic is NULL\nrow 2 \(topic \(integer\)\): the topic is not text but integer\nrow 3 \(topic "t{60}…"\): a topic of 5000 characters \(at most 512\)\n/);
  });
});

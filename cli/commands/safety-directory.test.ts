// Issue 41, "never say closed when nothing enforces it", on a manifest directory (docs/cli-safety.md): networks that
// admit everyone, when a change is in force (and --wait, which a directory has no operator for), typos that create a
// new scope, removals from a scope that is not there or of another scope's token, and scopes given as arguments.
// Every refusal: its exit code, one line, and the directory byte for byte as it was.
import { afterAll, beforeEach, describe, expect, it } from '@jest/globals';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { hashToken, tokenIdOf } from '../../core/index.js';
import { dirState, removeDir, svc, tempDir, type Result } from '../../test/cli/harness.js';

const T1 = 'token-of-safety-00001';
const T2 = 'token-of-safety-00002';
const CORE = 'origin.a.wis2.mw-met.data.core';
const dirs: string[] = [];
let dir = '';
afterAll(() => dirs.forEach(removeDir));
beforeEach(() => {
  dir = tempDir('svc-safety-');
  dirs.push(dir);
});

const cli = (...args: string[]): Promise<Result> => svc(['--dir', dir, ...args]);
/** Exit 0 (stderr shown when not). */
const ok = async (...args: string[]): Promise<Result> => {
  const r = await cli(...args);
  expect({ args, code: r.code, stderr: r.code === 0 ? '' : r.stderr }).toEqual({ args, code: 0, stderr: '' });
  return r;
};
/** Exit `code`, one line on stderr matching `pattern`, nothing on stdout, the directory unchanged. */
const refused = async (code: 1 | 2, pattern: RegExp, ...args: string[]): Promise<Result> => {
  const before = dirState(dir);
  const r = await cli(...args);
  expect({ code: r.code, stdout: r.stdout }).toEqual({ code, stdout: '' });
  expect(r.stderr).toMatch(/^error: [^\n]+\n$/);
  expect(r.stderr).toMatch(pattern);
  expect(dirState(dir)).toEqual(before);
  return r;
};

describe('networks that admit everyone (core WIDEST_PREFIX: IPv4 /8, IPv6 /32)', () => {
  it('0.0.0.0/0, ::/0 and networks wider than the bound are refused (exit 2, unchanged), from --cidr and from a file', async () => {
    await refused(2, /0\.0\.0\.0\/0 holds every IPv4 address: granted, it would let everyone in without a token: grant the addresses of the clients meant .* or add --allow-wide-network/, 'auth', 'add-network', '--path', 'data', '--cidr', '0.0.0.0/0');
    await refused(2, /::\/0 holds every IPv6 address/, 'auth', 'add-network', '--topic-hierarchy', CORE, '--cidr', '::/0');
    await refused(2, /10\.0\.0\.0\/7 holds 33,554,432 IPv4 addresses, more than one organisation's network \(the widest granted is a \/8\)/, 'auth', 'add-network', '--path', 'data', '--cidr', '10.0.0.0/7');
    await refused(2, /2001:d00::\/24 holds 2\^104 IPv6 addresses/, 'auth', 'add-network', '--path', 'data', '--cidr', '2001:d00::/24');
    const file = join(dir, '..', `${dir.split('/').at(-1)}-list.txt`);
    writeFileSync(file, '203.0.113.7/32 Global Cache\n0.0.0.0/0 everyone\n');
    await refused(2, /0\.0\.0\.0\/0 holds every IPv4 address/, 'auth', 'add-network', '--path', 'data', '--from-file', file, '--replace');
    // The bounds themselves are granted.
    expect((await cli('auth', 'add-network', '--path', 'data', '--cidr', '10.0.0.0/8', '--cidr', '2001:db8::/32')).code).toBe(0);
  });

  it('admitted with --allow-wide-network: every view says open to every address, never Closed', async () => {
    const added = await cli('auth', 'add-network', '--topic-hierarchy', CORE, '--cidr', '0.0.0.0/0', '--cidr', '::/0', '--allow-wide-network');
    expect(added.code).toBe(0);
    expect(added.stdout).toBe(`topic ${CORE} grants 0.0.0.0/0, ::/0; the store now says Open to every address (a granted network holds them all), 0 tokens, 2 networks (directory ${dir})\n`);
    expect(added.stderr).toContain('warning: 0.0.0.0/0 holds every IPv4 address: granted, it would let everyone in without a token; granted anyway (--allow-wide-network)\n');
    expect((await cli('auth', 'add-token', '--topic-hierarchy', CORE, T1)).code).toBe(0);
    const table = (await ok('auth', 'show')).stdout;
    expect(table).toMatch(new RegExp(`^topic +${CORE.replace(/\./g, '\\.')} +Open \\(every address\\) +1 +2 `, 'm'));
    expect(table).not.toMatch(new RegExp(`${CORE.replace(/\./g, '\\.')} +Closed`));
    expect((await ok('auth', 'show', '--topic-hierarchy', CORE, '-o', 'text')).stdout).toMatch(/^topic origin\.a\.wis2\.mw-met\.data\.core: Open to every address \(a granted network holds them all\), 1 token, 2 networks/);
    const json = JSON.parse((await ok('auth', 'show', '--topic-hierarchy', CORE, '-o', 'json')).stdout) as { scopes: Record<string, unknown>[] };
    expect(json.scopes[0]).toMatchObject({ state: 'Open', openTo: 'every address' });
    await refused(1, /is open to every address in .*: its links need no security object/, 'auth', 'show', '--topic-hierarchy', CORE, '-o', 'wcmp2');
    // add-token's own line says what the store holds; show is what says how it is enforced.
    const removed = await cli('auth', 'remove-network', '--topic-hierarchy', CORE, '--cidr', '::/0', '-o', 'json');
    expect(JSON.parse(removed.stdout)).toMatchObject({ state: 'Open', openTo: 'every IPv4 address' });
  });

  it('one family, or a wide network admitted: what is true, with how many addresses', async () => {
    await cli('auth', 'add-network', '--path', 'data', '--cidr', '0.0.0.0/0', '--allow-wide-network');
    expect((await ok('auth', 'show')).stdout).toMatch(/^path +data +Open \(every IPv4 address\) /m);
    const security = JSON.parse((await ok('auth', 'show', '--path', 'data', '-o', 'wcmp2')).stdout) as { security: { default: { description: string } } };
    expect(security.security.default.description).toContain('is open to every IPv4 address (the data provider grants a network that holds them all); IPv6 clients present a token');
    await cli('auth', 'add-network', '--metadata-id', 'urn:wmo:md:mw-met:x', '--cidr', '10.0.0.0/7', '--allow-wide-network');
    expect((await ok('auth', 'show')).stdout).toMatch(/^dataset +urn:wmo:md:mw-met:x +Closed \(wide network\) /m);
    expect((await ok('auth', 'show', '--metadata-id', 'urn:wmo:md:mw-met:x', '-o', 'text')).stdout).toMatch(/Closed, 0 tokens, 1 network \(10\.0\.0\.0\/7 admits 33,554,432 IPv4 addresses without a credential\)/);
  });
});

describe('when a change is in force, and --wait, in a directory', () => {
  it('every write says when an svc-auth serving the directory loads it, and how long a proxy cache may allow what it takes away', async () => {
    const added = await cli('auth', 'add-token', '--path', 'processes/svc', T1);
    expect(added.stderr).toMatch(/^New scope: path processes\/svc[^\n]*\nNot in force yet: an svc-auth serving this directory \(--scopes-dir\) loads it within about a second \(150 ms after the files settle, at worst at its 30 s rescan\)[^\n]*\n$/);
    const removed = await cli('auth', 'remove-token', '--path', 'processes/svc', T1);
    expect(removed.stdout).toBe(`Removed token ${tokenIdOf(hashToken(T1))} from path processes/svc in the store: it was the last one, the scope stays closed (closed by default: nothing executes or writes until a token grants it) (directory ${dir})\n`);
    expect(removed.stderr).toContain("A proxy caching svc-auth's answers may allow what this takes away for up to 30 s more (auth.cacheMaxAge, 30 s by default).");
    // Nothing written, nothing said.
    expect((await cli('auth', 'close', '--path', 'processes/svc')).code).toBe(0);
    expect((await cli('auth', 'close', '--path', 'processes/svc')).stderr).toBe('');
  });

  it('--wait is a usage error (exit 2, nothing written): a directory has no operator to wait for; so is --wait with --dry-run, and a bad --wait-timeout', async () => {
    await refused(2, /--wait waits for svc-operator, and directory .* has none: an svc-auth serving it \(--scopes-dir\) loads a change within about a second of the write; leave --wait out \(nothing was changed\)/, 'auth', 'add-token', '--path', 'processes/svc', T1, '--wait');
    await refused(2, /--wait waits for svc-operator/, 'auth', 'remove-tokens', '--path', 'processes/svc', '--wait-timeout', '10s');
    await refused(2, /--wait waits for a written change to be in force, and --dry-run writes nothing/, 'auth', 'add-token', '--path', 'processes/svc', '--dry-run', '--wait');
    await refused(2, /--wait-timeout: "soon" is not a duration/, 'auth', 'close', '--path', 'processes/svc', '--wait-timeout', 'soon');
  });
});

describe('a typo creates a new scope: said, and warned (stderr, not an error)', () => {
  it('a new scope is said; a small edit from an existing one, or a topic that does not fit WIS2, is warned with the command that takes it back', async () => {
    await ok('auth', 'add-token', '--topic-hierarchy', CORE, T1, '-o', 'json');
    const typo = await cli('auth', 'add-token', '--topic-hierarchy', 'origin.a.wis2.mw-met.data.cor', T2);
    expect(typo.code).toBe(0);
    const lines = typo.stderr.split('\n');
    expect(lines[0]).toBe(`New scope: topic origin.a.wis2.mw-met.data.cor (no object in directory ${dir} held it before)`);
    expect(lines[1]).toBe(`warning: topic origin.a.wis2.mw-met.data.cor is 1 edit from the existing topic ${CORE}: if you meant that one, take this back with svc --dir ${dir} auth remove-token --topic-hierarchy origin.a.wis2.mw-met.data.cor --id ${tokenIdOf(hashToken(T2))} and run the command with --topic-hierarchy ${CORE}`);
    expect(lines[2]).toBe('warning: topic origin.a.wis2.mw-met.data.cor does not fit the WIS2 topic hierarchy (origin|cache.a.wis2.<centre-id>.data|metadata.core|recommended...): level 6 is "cor", not core or recommended; if it is not meant as a WIS2 topic, ignore this');
    expect(typo.stderr).not.toContain(T2);
    // Adding to it again: not new, nothing warned.
    expect((await cli('auth', 'add-token', '--topic-hierarchy', 'origin.a.wis2.mw-met.data.cor', T1)).stderr).not.toMatch(/New scope|warning/);
  });

  it('levels out of order, a path that is a topic with slashes, and a dry run that would create a scope', async () => {
    const order = await cli('auth', 'add-subject', '--topic-hierarchy', 'wis2.origin.a.mw-met', '--group', 'ops');
    expect(order.stderr).toContain('warning: topic wis2.origin.a.mw-met does not fit the WIS2 topic hierarchy (origin|cache.a.wis2.<centre-id>.data|metadata.core|recommended...): it starts with "wis2" before "origin"');
    const path = await cli('auth', 'close', '--path', 'origin/a/wis2/mw-met/data/core');
    expect(path.stderr).toContain('warning: --path origin/a/wis2/mw-met/data/core names a path of the host, but reads like a WIS2 topic written with slashes: a topic is --topic-hierarchy origin.a.wis2.mw-met.data.core');
    const dry = await cli('auth', 'add-token', '--topic-hierarchy', CORE, '--dry-run');
    expect(dry.stderr).toBe(`Would create: topic ${CORE} (no object in directory ${dir} held it before)\n`);
  });
});

describe('removing what is not there', () => {
  it('from a scope no object holds: exit 1, the nearest scope named, nothing changed; for every command that takes something away', async () => {
    await ok('auth', 'add-token', '--topic-hierarchy', CORE, T1);
    const typo = ['--topic-hierarchy', 'origin.a.wis2.mw-met.data.cre'];
    const said = /^error: topic:origin\.a\.wis2\.mw-met\.data\.cre is not a scope of directory [^ ]+ \(no object holds it\): there is no (token|subject|network|closed: true) to remove\. Did you mean --topic-hierarchy origin\.a\.wis2\.mw-met\.data\.core\? svc --dir [^ ]+ auth show lists the scopes \(nothing was changed\)\n$/;
    await refused(1, said, 'auth', 'remove-tokens', ...typo);
    await refused(1, said, 'auth', 'remove-token', ...typo, '--id', tokenIdOf(hashToken(T1)));
    await refused(1, said, 'auth', 'remove-subject', ...typo, '--group', 'ops');
    await refused(1, said, 'auth', 'remove-network', ...typo, '--cidr', '203.0.113.7/32');
    await refused(1, said, 'auth', 'open', ...typo);
    await refused(1, /path:processes\/station-inf is not a scope .*there is no public: true to remove/, 'auth', 'public', '--path', 'processes/station-inf', '--off');
  });

  it("another scope's token: the refusal names the scope that holds it and the command to remove it there, never the token", async () => {
    await cli('auth', 'add-token', '--topic-hierarchy', CORE, T1);
    await cli('auth', 'add-token', '--path', 'processes/svc', T2);
    const id = tokenIdOf(hashToken(T1));
    const byToken = await refused(1, new RegExp(`^error: token ${id} is not a token of path:processes/svc, but of topic:${CORE.replace(/\./g, '\\.')}: to remove it there, svc --dir [^ ]+ auth remove-token --topic-hierarchy ${CORE.replace(/\./g, '\\.')} --id ${id} \\(nothing was changed\\)\\n$`), 'auth', 'remove-token', '--path', 'processes/svc', T1);
    expect(byToken.stderr).not.toContain(T1);
    await refused(1, new RegExp(`token ${id} is not a token of path:processes/svc, but of topic:`), 'auth', 'remove-token', '--path', 'processes/svc', '--id', id);
    // A token no scope holds: as before.
    await refused(1, /the given token \(id [0-9a-f]{12}\) is not a token of path:processes\/svc: list the ids with/, 'auth', 'remove-token', '--path', 'processes/svc', 'token-nobody-holds-0001');
  });
});

describe('smaller things a newcomer trips on', () => {
  it('a scope given as an argument: which flag (exit 2), a token-shaped argument never echoed', async () => {
    await refused(2, /^error: svc auth show takes the scope as a flag, not as an argument: give --topic-hierarchy origin\.a\.wis2\.mw-met\.data\.core \(or one of/, 'auth', 'show', CORE);
    await refused(2, /give --topic-hierarchy origin\/a\/wis2\/mw-met/, 'auth', 'remove-tokens', 'origin/a/wis2/mw-met');
    await refused(2, /give --metadata-id urn:wmo:md:mw-met:obs/, 'auth', 'close', 'urn:wmo:md:mw-met:obs');
    await refused(2, /give --path processes\/svc/, 'auth', 'open', 'processes/svc');
    const secret = 'svc_Secret.Looking/Token-000000000000000';
    const r = await refused(2, /this one looks like a path, given with --path/, 'auth', 'show', secret);
    expect(r.stderr).not.toContain(secret);
    const word = await refused(2, /^error: svc auth show takes no argument: a scope goes in a flag/, 'auth', 'show', 'processessvc');
    expect(word.stderr).not.toContain('processessvc');
    await refused(2, /^error: svc auth has-access-topic takes one argument, the token; the scope goes in a flag/, 'auth', 'has-access-topic', CORE, T1);
  });

  it('--topic and other spellings of a scope flag get a suggestion', async () => {
    await refused(2, /unknown option '--topic' \(Did you mean --topic-hierarchy\?\) \(see svc auth show --help\)/, 'auth', 'show', '--topic', CORE);
    await refused(2, /unknown option '--topic=origin\.a' \(Did you mean --topic-hierarchy\?\)/, 'auth', 'add-token', '--topic=origin.a');
    await refused(2, /unknown option '--dataset' \(Did you mean --metadata-id\?\)/, 'auth', 'close', '--dataset', 'urn:x:y');
    // commander's own suggestion stays as it was.
    await refused(2, /unknown option '--topic-hierachy' \(Did you mean --topic-hierarchy\?\)/, 'auth', 'show', '--topic-hierachy', CORE);
  });
});
